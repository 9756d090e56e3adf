#pragma once
// Regime files: the TOML that defines regimes (docs/regimes.md). The built-in regimes are
// regimes/study.toml of the source tree, compiled into kwb_core as a Qt resource (so every program
// has them without a data folder, and a stored run's regime always resolves); a user adds regimes
// as *.toml files in userRegimesDir(), read whenever the regimes are listed or one is looked up.
// Every key is checked at load: an error names the file and line, the regime (index and name), the
// key and what is wrong; an unknown key is an error, and no regime of a bad file is used.

#include "core/config/regime.h"

#include <QByteArray>
#include <QList>
#include <QString>
#include <QStringList>

#include <optional>

namespace kwb {

/// The bounds of a regime's numbers, in a regime file and on `kwb run`'s command line.
constexpr int kRegimeMaxN = 64;
constexpr int kRegimeMaxTurns = 32;
constexpr double kRegimeMaxTemperature = 2.0;

/// One regime file read: its regimes in file order, or the first error.
struct RegimeFileLoad
{
    QString path;
    QList<Regime> regimes; ///< empty when there is an error
    /// "FILE:LINE: regime[2] (agent).n: must be an integer from 1 to 64, not 0" (TOML syntax errors:
    /// "FILE:LINE:COLUMN: …"). Empty when the file loaded.
    QString error;
    bool ok() const { return error.isEmpty(); }
};

/// Reads regimes in the file format of regimes/study.toml; `origin` names the text in errors.
RegimeFileLoad parseRegimeFile(const QByteArray& toml, const QString& origin);
/// parseRegimeFile() of the file at `path` (an error when it cannot be read).
RegimeFileLoad loadRegimeFile(const QString& path);

/// The folder of the user's regimes: GenericConfigLocation/kernel-workbench/regimes
/// (~/.config/kernel-workbench/regimes on Linux, $XDG_CONFIG_HOME's where set). Not created.
QString userRegimesDir();

/// A regime with the file it comes from.
struct RegimeEntry
{
    Regime regime;
    QString file;         ///< the user's file; the resource path for a built-in
    bool builtin = false; ///< from the compiled-in regimes/study.toml
};

/// Every regime a run can use: the built-ins in file order, then the user's (files by name, each in
/// file order).
struct RegimeCatalog
{
    QList<RegimeEntry> entries;
    /// One per user file that was not used, with why (a bad file, a name already taken).
    QStringList errors;

    QStringList names() const;
    const RegimeEntry* find(const QString& name) const;
};

/// The built-ins and the regimes of `userDir` (userRegimesDir() unless given; empty: none).
RegimeCatalog regimeCatalog(const QString& userDir);
RegimeCatalog regimeCatalog();

} // namespace kwb
