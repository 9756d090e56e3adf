#pragma once
// Which code this build is (issue 38 item 1): a version number is shared by many commits, so every
// run stores the commit too (RunVersions::kwbCommit), and About, --version and the exports'
// provenance show it.

#include <QString>

namespace kwb {

/// `git describe --always --abbrev=12` of the source tree when this was built ("036ecb77d146"),
/// "-dirty" appended when a tracked file differed from that commit, or "unknown" when the source
/// was not a git checkout (a tarball) or git could not say. Defined in a file that
/// cmake/KwbBuildCommit.cmake writes at every build.
QString kwbCommit();

/// A version with its commit, as every place shows them: "0.1.0 (036ecb77d146-dirty)"; the version
/// alone when no commit is known (runs stored before runs kept it).
inline QString versionWithCommit(const QString& version, const QString& commit)
{
    return commit.isEmpty() ? version : QStringLiteral("%1 (%2)").arg(version, commit);
}

} // namespace kwb
