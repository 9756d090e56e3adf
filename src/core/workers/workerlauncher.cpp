#include "workerlauncher.h"
#include "gpulease.h"

#include <QCryptographicHash>
#include <QDateTime>
#include <QDir>
#include <QFileInfo>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QMutex>
#include <QMutexLocker>
#include <QProcess>
#include <QRegularExpression>
#include <QSaveFile>
#include <QStandardPaths>
#include <QTemporaryDir>

#include <map>
#include <memory>
#include <optional>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <spawn.h>
#include <unistd.h>

namespace kwb {

namespace {

QString bubblewrapProgram(const QString& configured)
{
    if (!configured.isEmpty())
        return configured;
    return QStandardPaths::findExecutable(QStringLiteral("bwrap"));
}

// The options every sandbox shares, local or remote: namespaces of its own (no other process,
// network, IPC or host name visible), a new session (no controlling terminal to push input into),
// no capabilities, and the worker as PID 1 of its PID namespace (sandboxinit.h: a signal from
// inside cannot kill it, so a death by SIGKILL came from outside). bwrap ends with kwb.
QStringList sandboxNamespaceArguments(bool asPid1 = true)
{
    QStringList arguments{
        QStringLiteral("--die-with-parent"),    QStringLiteral("--new-session"), QStringLiteral("--unshare-pid"),
        QStringLiteral("--unshare-net"),        QStringLiteral("--unshare-ipc"), QStringLiteral("--unshare-uts"),
        QStringLiteral("--unshare-cgroup-try"), QStringLiteral("--cap-drop"),    QStringLiteral("ALL"),
    };
    if (asPid1) // else bwrap's own init is PID 1 and reaps (an extension build: ninja's children)
        arguments << QStringLiteral("--as-pid-1");
    return arguments;
}

// After a fresh /proc: the kernel's settings and triggers there check only the uid, and bwrap
// leaves /proc/sys writable to a process that runs as root (core_pattern would run a program of
// the candidate's as root on the host): read-only, like /sys.
QStringList procSettingsReadOnly()
{
    QStringList arguments;
    for (const char* part : {"sys", "sysrq-trigger", "irq", "bus", "acpi", "fs", "scsi"})
        arguments << QStringLiteral("--ro-bind-try") << QStringLiteral("/proc/") + QLatin1String(part)
                  << QStringLiteral("/proc/") + QLatin1String(part);
    return arguments;
}

// The few files of /etc that the loader, Python and the CUDA libraries read; /etc/passwd and
// /etc/group are made up (identityLines()), the rest of /etc (shadow, ssh keys, the machine's
// configuration) is not there.
const QStringList& etcFiles()
{
    static const QStringList files{
        QStringLiteral("/etc/ld.so.cache"),     QStringLiteral("/etc/ld.so.conf"),
        QStringLiteral("/etc/ld.so.conf.d"),
        QStringLiteral("/etc/alternatives"), // Debian's libblas/liblapack (libtorch links them) are links through it
        QStringLiteral("/etc/localtime"),       QStringLiteral("/etc/nsswitch.conf"),
        QStringLiteral("/etc/host.conf"),       QStringLiteral("/etc/os-release"),
        QStringLiteral("/etc/debian_version"),  QStringLiteral("/etc/lsb-release"),
        QStringLiteral("/etc/python3"),         QStringLiteral("/etc/python3.11"),
        QStringLiteral("/etc/python3.12"),      QStringLiteral("/etc/python3.13"),
        QStringLiteral("/etc/OpenCL"),          QStringLiteral("/etc/vulkan"),
        QStringLiteral("/etc/nvidia"),          QStringLiteral("/etc/gcrypt"),
        QStringLiteral("/etc/ssl/openssl.cnf"),
    };
    return files;
}

// The made-up /etc/passwd and /etc/group: only this user (as `kwb`), root and nobody, so that
// getpwuid() works in the sandbox (Python's getpass, torch's cache paths) without the host's list
// of users. %u and %g stand for the uid and gid; a line of `ifNotRoot` is left out where that id
// is 0 (then root's line names it).
struct IdentityLine
{
    const char* file;
    const char* text;
    char ifNotRoot; ///< 'u', 'g', or 0: always
};
const std::vector<IdentityLine>& identityLines()
{
    static const std::vector<IdentityLine> lines{
        {"passwd", "root:x:0:0:root:/root:/usr/sbin/nologin", 0},
        {"passwd", "kwb:x:%u:%g:Kernel Workbench worker:/nonexistent:/usr/sbin/nologin", 'u'},
        {"passwd", "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin", 0},
        {"group", "root:x:0:", 0},
        {"group", "kwb:x:%g:", 'g'},
        {"group", "nogroup:x:65534:", 0},
    };
    return lines;
}

// The folder holding this process's made-up passwd and group (identityLines()); made once per
// process, removed at exit.
QString sandboxIdentityDir()
{
    static QMutex mutex;
    static std::optional<QTemporaryDir> dir;
    QMutexLocker lock(&mutex);
    if (dir)
        return dir->isValid() ? dir->path() : QString();
    dir.emplace(QDir(QDir::tempPath()).filePath(QStringLiteral("kwb-sandbox-etc-XXXXXX")));
    if (!dir->isValid())
        return {};
    const QString uid = QString::number(::getuid());
    const QString gid = QString::number(::getgid());
    std::map<QString, QByteArray> files;
    for (const IdentityLine& line : identityLines()) {
        if ((line.ifNotRoot == 'u' && uid == QLatin1String("0")) ||
            (line.ifNotRoot == 'g' && gid == QLatin1String("0")))
            continue;
        QString text = QString::fromLatin1(line.text);
        text.replace(QLatin1String("%u"), uid).replace(QLatin1String("%g"), gid);
        files[QString::fromLatin1(line.file)] += text.toUtf8() + '\n';
    }
    for (const auto& [name, text] : files) {
        QFile file(QDir(dir->path()).filePath(name));
        if (!file.open(QIODevice::WriteOnly) || file.write(text) != text.size())
            return {};
        file.setPermissions(QFileDevice::ReadOwner | QFileDevice::ReadGroup | QFileDevice::ReadOther);
    }
    return dir->path();
}

// What a sandbox never binds as a whole, though a worker's paths may name it: the root, and the
// folders that hold the user's files or the host's sockets (the user's home is refused too).
const QStringList& refusedBindPaths()
{
    static const QStringList refused{QStringLiteral("/"),        QStringLiteral("/home"), QStringLiteral("/root"),
                                     QStringLiteral("/tmp"),     QStringLiteral("/run"),  QStringLiteral("/var"),
                                     QStringLiteral("/var/run"), QStringLiteral("/etc"),  QStringLiteral("/proc"),
                                     QStringLiteral("/dev"),     QStringLiteral("/mnt"),  QStringLiteral("/media")};
    return refused;
}

// The top folders of the system: read-only in every sandbox (a link among them as a link), so a
// worker's path inside one needs no bind of its own.
const QStringList& topLevelLinksOrFolders()
{
    static const QStringList tops{QStringLiteral("/bin"),   QStringLiteral("/sbin"),  QStringLiteral("/lib"),
                                  QStringLiteral("/lib32"), QStringLiteral("/lib64"), QStringLiteral("/libx32")};
    return tops;
}
QStringList systemRoots()
{
    return QStringList{QStringLiteral("/usr"), QStringLiteral("/opt"), QStringLiteral("/sys")} +
           topLevelLinksOrFolders();
}

// The worker's environment variables that name folders it reads (colon-separated lists): bound
// read-only, here from the worker's environment, on a remote host from the environment there.
const QStringList& readOnlyPathVariables()
{
    static const QStringList names{QStringLiteral("KWB_TASKS_DIR"),       QStringLiteral("LD_LIBRARY_PATH"),
                                   QStringLiteral("PYTHONPATH"),          QStringLiteral("PYTHONHOME"),
                                   QStringLiteral("CUDA_HOME"),           QStringLiteral("CUDA_PATH"),
                                   QStringLiteral("KWB_CUDA_INCLUDE_DIR")};
    return names;
}

// The tools an extension build runs: of the builder's PATH only their folders are shown to it
// (not every folder on it: a user's ~/.cargo/bin or ~/.pyenv would show the home's layout).
const QStringList& builderTools()
{
    static const QStringList tools{QStringLiteral("ninja"),   QStringLiteral("c++"), QStringLiteral("g++"),
                                   QStringLiteral("gcc"),     QStringLiteral("cc"),  QStringLiteral("nvcc"),
                                   QStringLiteral("python3"), QStringLiteral("sh")};
    return tools;
}

// The worker's variables that point into its scratch folder (a path relative to it; "" is the
// folder itself), written inside the sandbox, where everything else is read-only: an empty home
// of its own (the user's is not there) and CUDA's JIT cache (~/.nv/ComputeCache by default), a
// cache per worker also keeping one candidate's entries from the next.
const std::vector<std::pair<QString, QString>>& scratchEnvironment()
{
    static const std::vector<std::pair<QString, QString>> variables{
        {QStringLiteral("TMPDIR"), QString()},
        {QStringLiteral("HOME"), QStringLiteral("home")},
        {QStringLiteral("CUDA_CACHE_PATH"), QStringLiteral("cuda-cache")},
    };
    return variables;
}

// A path the sandbox binds read-only: it exists, and it is not refused (refusedBindPaths(), the
// user's home).
bool bindablePath(const QString& path)
{
    if (path.isEmpty() || !QDir::isAbsolutePath(path) || !QFileInfo::exists(path))
        return false;
    const QString clean = QDir::cleanPath(path);
    return !refusedBindPaths().contains(clean) && clean != QDir::cleanPath(QDir::homePath());
}

// The sandbox's layout (docs/sandbox.md, "The OS sandbox"), one list for every sandbox, rendered
// as bwrap's arguments here (bubblewrapArguments()) and as sh that decides each step on a remote
// host (remoteLayoutScript()): an empty root with the system's programs and libraries read-only
// (/usr, the /lib and /bin links or folders, /opt), a few /etc files, a made-up passwd and group,
// a fresh /proc of its own PID namespace with the kernel's settings read-only, a minimal /dev with
// the GPU's nodes, /sys read-only (the CUDA driver and NVML read the PCI topology there), a private
// /tmp and /dev/shm, then the worker's own tree and folders read-only, the extension cache
// read-only, and the one writable folder: the scratch folder (TMPDIR, HOME, CUDA's JIT cache).
// An extension build (Builder) gets the same without the GPU, the scratch folder and the cache,
// with the toolchain's folders on PATH and a larger /tmp (its home too); the build broker adds its
// staging folder, writable.
enum class SandboxRole { Worker, Builder };

struct SandboxStep
{
    enum class Kind {
        Fixed,    ///< `words`, as they are
        TopLevel, ///< words[0]: a link → --symlink to its target (relative to /), a folder → --ro-bind, else nothing
        Devices,  ///< --dev-bind each entry of /dev whose name matches the glob words[0]
        Identity,     ///< the made-up /etc/passwd and /etc/group (identityLines()), read-only
        ReadOnly,     ///< the role's read-only paths, each by its real path (a bind onto a path through a link
                      ///< fails), where bindablePath() and not under systemRoots()
        ToolPath,     ///< --setenv PATH: the folders of builderTools() found on PATH, then /usr/bin:/bin
        Scratch,      ///< --bind the scratch folder (on a remote host also its variables, scratchEnvironment())
        Cache,        ///< the extension cache, read-only
        StagingMount, ///< the builder's: an empty tmpfs at the extension cache's path (see sandboxLayout)
        Broker,       ///< the build broker's socket folder, read-only
        Exact,        ///< here only: files bound read-only as they are (the GPU's quiet lock and its companions)
        Chdir,        ///< --chdir the scratch folder (kwb's working folder is not in the sandbox)
    };
    Kind kind;
    QStringList words = {};
};

QList<SandboxStep> sandboxLayout(SandboxRole role)
{
    using Kind = SandboxStep::Kind;
    const bool worker = role == SandboxRole::Worker;
    QList<SandboxStep> steps{
        {Kind::Fixed, sandboxNamespaceArguments(worker)},
        {Kind::Fixed, {QStringLiteral("--ro-bind"), QStringLiteral("/usr"), QStringLiteral("/usr")}}};
    for (const QString& top : topLevelLinksOrFolders())
        steps.append({Kind::TopLevel, {top}});
    QStringList etc{QStringLiteral("--ro-bind-try"), QStringLiteral("/opt"), QStringLiteral("/opt")};
    for (const QString& file : etcFiles())
        etc << QStringLiteral("--ro-bind-try") << file << file;
    steps.append({Kind::Fixed, etc});
    steps.append({Kind::Identity});
    steps.append(
        {Kind::Fixed, QStringList{QStringLiteral("--proc"), QStringLiteral("/proc")} + procSettingsReadOnly()});
    // Private /tmp and /dev/shm, bounded: their pages are the host's memory, which the host
    // limits (resident memory) do not count. A build's /tmp holds nvcc's intermediate files.
    steps.append({Kind::Fixed,
                  {QStringLiteral("--dev"), QStringLiteral("/dev"), QStringLiteral("--size"),
                   QString::number(kSandboxShmBytes), QStringLiteral("--tmpfs"), QStringLiteral("/dev/shm"),
                   QStringLiteral("--ro-bind-try"), QStringLiteral("/sys"), QStringLiteral("/sys"),
                   QStringLiteral("--size"), QString::number(worker ? kSandboxTmpBytes : kSandboxBuildTmpBytes),
                   QStringLiteral("--tmpfs"), QStringLiteral("/tmp")}});
    if (worker) // the GPU's device nodes (nvidia0…, nvidiactl, nvidia-uvm, nvidia-modeset, nvidia-caps/); a build needs
                // none
        steps.append({Kind::Devices, {QStringLiteral("nvidia*")}});
    steps.append({Kind::ReadOnly});
    if (worker) {
        steps.append({Kind::Scratch});
        steps.append({Kind::Cache}); // builds go through the broker, which alone publishes
        steps.append({Kind::Broker});
        steps.append({Kind::Exact});
    } else {
        steps.append({Kind::ToolPath});
        // The broker binds the build's staging folder (inside the cache) after this prefix, when the
        // root is already read-only: bwrap could not make its mount point where the cache lies
        // outside every folder shown (a user's ~/.cache). An empty tmpfs there is that place,
        // writable, while the cache's entries stay unseen by the build.
        steps.append({Kind::StagingMount});
        steps.append(
            {Kind::Fixed,
             {QStringLiteral("--setenv"), QStringLiteral("HOME"), QStringLiteral("/tmp"), QStringLiteral("--setenv"),
              QStringLiteral("TMPDIR"), QStringLiteral("/tmp"), QStringLiteral("--unsetenv"),
              QStringLiteral("KWB_BUILD_BROKER"), QStringLiteral("--unsetenv"), QStringLiteral("CUDA_CACHE_PATH")}});
    }
    // Last after the binds: bwrap's own root is a tmpfs that stays writable (and unbounded) otherwise.
    steps.append({Kind::Fixed, {QStringLiteral("--remount-ro"), QStringLiteral("/")}});
    if (worker)
        steps.append({Kind::Chdir});
    return steps;
}

// What a sandbox here shows besides the system (empty: not there).
struct LocalSandbox
{
    QString scratchDir;
    QStringList readOnly; ///< resolved and filtered (SandboxStep::Kind::ReadOnly)
    QString extensionCache;
    QString brokerDir;
    QStringList exact;    ///< bound as they are
    QStringList toolDirs; ///< the builder's (builderToolDirs())
};

// The folders of builderTools() found on `path` (a PATH value), each as found and as resolved.
QStringList builderToolDirs(const QString& path)
{
    const QStringList pathDirs = path.split(QLatin1Char(':'), Qt::SkipEmptyParts);
    QStringList toolDirs;
    for (const QString& tool : builderTools()) {
        const QString found = QStandardPaths::findExecutable(tool, pathDirs);
        if (found.isEmpty())
            continue;
        for (const QString& dir :
             {QFileInfo(found).absolutePath(), QFileInfo(QFileInfo(found).canonicalFilePath()).absolutePath()})
            if (!toolDirs.contains(dir))
                toolDirs << dir;
    }
    return toolDirs;
}

// The layout rendered as bwrap's arguments for this host.
QStringList bubblewrapArguments(SandboxRole role, const LocalSandbox& paths)
{
    using Kind = SandboxStep::Kind;
    QStringList arguments;
    QStringList bound = systemRoots();
    const auto inside = [&bound](const QString& path) {
        for (const QString& root : bound)
            if (path == root || path.startsWith(root + QLatin1Char('/')))
                return true;
        return false;
    };
    const auto bindReadOnly = [&](const QString& path) {
        if (!path.isEmpty())
            arguments << QStringLiteral("--ro-bind") << path << path;
    };
    for (const SandboxStep& step : sandboxLayout(role)) {
        switch (step.kind) {
        case Kind::Fixed: arguments += step.words; break;
        case Kind::TopLevel: {
            const QFileInfo info(step.words.at(0));
            if (info.isSymLink())
                arguments << QStringLiteral("--symlink")
                          << info.symLinkTarget().replace(QRegularExpression(QStringLiteral("^/")), QString())
                          << step.words.at(0);
            else if (info.isDir())
                bindReadOnly(step.words.at(0));
            break;
        }
        case Kind::Devices: {
            const QDir dev(QStringLiteral("/dev"));
            for (const QString& node :
                 dev.entryList({step.words.at(0)}, QDir::System | QDir::Dirs | QDir::NoDotAndDotDot))
                arguments << QStringLiteral("--dev-bind") << dev.filePath(node) << dev.filePath(node);
            break;
        }
        case Kind::Identity:
            if (const QString identity = sandboxIdentityDir(); !identity.isEmpty())
                arguments << QStringLiteral("--ro-bind") << identity + QStringLiteral("/passwd")
                          << QStringLiteral("/etc/passwd") << QStringLiteral("--ro-bind")
                          << identity + QStringLiteral("/group") << QStringLiteral("/etc/group");
            break;
        case Kind::ReadOnly:
            for (const QString& path :
                 paths.readOnly + (role == SandboxRole::Builder ? paths.toolDirs : QStringList())) {
                const QString real = QFileInfo(path).canonicalFilePath();
                if (!bindablePath(real) || inside(real))
                    continue;
                bound << real;
                bindReadOnly(real);
            }
            break;
        case Kind::ToolPath:
            arguments << QStringLiteral("--setenv") << QStringLiteral("PATH")
                      << (paths.toolDirs + QStringList{QStringLiteral("/usr/bin"), QStringLiteral("/bin")})
                             .join(QLatin1Char(':'));
            break;
        case Kind::Scratch:
            if (!paths.scratchDir.isEmpty())
                arguments << QStringLiteral("--bind") << paths.scratchDir << paths.scratchDir;
            break;
        case Kind::Cache: bindReadOnly(paths.extensionCache); break;
        case Kind::StagingMount:
            if (!paths.extensionCache.isEmpty())
                arguments << QStringLiteral("--size") << QString::number(kSandboxStagingMountBytes)
                          << QStringLiteral("--tmpfs") << paths.extensionCache;
            break;
        case Kind::Broker: bindReadOnly(paths.brokerDir); break;
        case Kind::Exact:
            for (const QString& path : paths.exact)
                bindReadOnly(path);
            break;
        case Kind::Chdir:
            if (!paths.scratchDir.isEmpty())
                arguments << QStringLiteral("--chdir") << paths.scratchDir;
            break;
        }
    }
    return arguments;
}

// The layout rendered as sh for a remote host (remoteWorkerScript()): each step decided there,
// written NUL-separated to the file "$f" for `bwrap --args`. It uses the script's $t (its private
// folder), $d (the scratch folder), $w (the worker's path there), $c (the extension cache, or
// empty), $s (the broker's socket folder, or empty) and $tools (the builder's tool folders, ':'-
// separated), and the functions a (append words) and ro (a read-only path, filtered as here).
QString remoteLayoutScript(SandboxRole role)
{
    using Kind = SandboxStep::Kind;
    QStringList lines;
    for (const SandboxStep& step : sandboxLayout(role)) {
        switch (step.kind) {
        case Kind::Fixed: {
            QStringList words;
            for (const QString& word : step.words)
                words << shellQuote(word);
            lines << QStringLiteral("a ") + words.join(QLatin1Char(' '));
            break;
        }
        case Kind::TopLevel: {
            const QString top = shellQuote(step.words.at(0));
            lines << QStringLiteral("if [ -L %1 ]; then x=$(readlink -f %1) && a --symlink \"${x#/}\" %1; "
                                    "elif [ -d %1 ]; then a --ro-bind %1 %1; fi")
                         .arg(top);
            break;
        }
        case Kind::Devices: // the glob unquoted, expanded there
            lines << QStringLiteral("for x in /dev/%1; do if [ -e \"$x\" ]; then a --dev-bind \"$x\" \"$x\"; fi; done")
                         .arg(step.words.at(0));
            break;
        case Kind::Identity: {
            QStringList identity{
                QStringLiteral("if [ ! -e \"$t/etc\" ]; then mkdir \"$t/etc\"; u=$(id -u); g=$(id -g)")};
            for (const IdentityLine& line : identityLines()) {
                // The lines hold no quote, $ or backslash: safe in double quotes.
                QString text = QString::fromLatin1(line.text);
                text.replace(QLatin1String("%u"), QLatin1String("$u"))
                    .replace(QLatin1String("%g"), QLatin1String("$g"));
                const QString write =
                    QStringLiteral("printf '%s\\n' \"%1\" >> \"$t/etc/%2\"").arg(text, QLatin1String(line.file));
                identity << (line.ifNotRoot ? QStringLiteral("if [ \"$%1\" != 0 ]; then %2; fi")
                                                  .arg(QString(QLatin1Char(line.ifNotRoot)), write)
                                            : write);
            }
            identity << QStringLiteral("fi");
            lines << identity.join(QStringLiteral("\n"));
            lines << QStringLiteral("a --ro-bind \"$t/etc/passwd\" /etc/passwd --ro-bind \"$t/etc/group\" /etc/group");
            break;
        }
        case Kind::ReadOnly: {
            // The worker's own tree (the folder above bin/, or its own folder; its real one too),
            // then the folders its variables name there.
            QStringList variables = readOnlyPathVariables();
            variables << QStringLiteral("KWB_SANDBOX_READ_ONLY");
            lines << QStringLiteral("x=$(dirname \"$w\"); case $x in */bin) x=$(dirname \"$x\");; esac; ro \"$x\"\n"
                                    "x=$(readlink -f \"$w\") && ro \"$(dirname \"$x\")\"\n"
                                    "for v in %1; do eval \"x=\\${$v-}\"; IFS=:; set -f; for p in $x; do ro \"$p\"; "
                                    "done; set +f; unset IFS; done")
                         .arg(variables.join(QLatin1Char(' ')));
            if (role == SandboxRole::Worker)
                lines << QStringLiteral("if [ -n \"$k\" ]; then ro \"$k\"; fi"); // its tasks (remoteWorkerScript)
            if (role == SandboxRole::Builder)
                lines << QStringLiteral("IFS=:; set -f; for p in $tools; do ro \"$p\"; done; set +f; unset IFS");
            break;
        }
        case Kind::ToolPath: lines << QStringLiteral("a --setenv PATH \"${tools:+$tools:}/usr/bin:/bin\""); break;
        case Kind::Scratch: {
            QStringList scratch{QStringLiteral("a --bind \"$d\" \"$d\"")};
            for (const auto& [name, relative] : scratchEnvironment())
                scratch << QStringLiteral("--setenv %1 \"$d%2\"")
                               .arg(name, relative.isEmpty() ? QString() : QLatin1Char('/') + relative);
            lines << scratch.join(QLatin1Char(' '));
            break;
        }
        case Kind::Cache: lines << QStringLiteral("if [ -n \"$c\" ]; then a --ro-bind \"$c\" \"$c\"; fi"); break;
        case Kind::StagingMount:
            lines << QStringLiteral("if [ -n \"$c\" ]; then a --size %1 --tmpfs \"$c\"; fi")
                         .arg(kSandboxStagingMountBytes);
            break;
        case Kind::Broker: lines << QStringLiteral("if [ -n \"$s\" ]; then a --ro-bind \"$s\" \"$s\"; fi"); break;
        case Kind::Exact: break; // this machine's files mean nothing there
        case Kind::Chdir: lines << QStringLiteral("a --chdir \"$d\""); break;
        }
    }
    return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

// The sh functions remoteLayoutScript() uses: a appends its words to "$f", NUL-separated; ro
// appends a read-only bind of a path's real path where bindablePath() and systemRoots() allow.
QString remoteLayoutFunctions()
{
    QStringList refused;
    for (const QString& path : refusedBindPaths())
        refused << shellQuote(path);
    QStringList roots;
    for (const QString& root : systemRoots())
        roots << shellQuote(root) << shellQuote(root) + QStringLiteral("/*");
    return QStringLiteral("a() { printf '%s\\0' \"$@\" >> \"$f\"; }\n"
                          "h=$(readlink -f \"$HOME\" 2>/dev/null) || h=$HOME\n"
                          "ro() {\n"
                          "  case $1 in /*) ;; *) return 0;; esac\n"
                          "  p=$(readlink -f \"$1\" 2>/dev/null) && [ -e \"$p\" ] || return 0\n"
                          "  case $p in %1|%2) return 0;; esac\n"
                          "  [ \"$p\" = \"$h\" ] || a --ro-bind \"$p\" \"$p\"\n"
                          "}\n"
                          "tools=\n"
                          "for x in %3; do x=$(command -v \"$x\") || continue; case $x in /*) ;; *) continue;; esac\n"
                          "  for y in \"$(dirname \"$x\")\" \"$(dirname \"$(readlink -f \"$x\")\")\"; do\n"
                          "    case :$tools: in *:\"$y\":*) ;; *) tools=${tools:+$tools:}$y;; esac; done; done\n")
        .arg(refused.join(QLatin1Char('|')), roots.join(QLatin1Char('|')), builderTools().join(QLatin1Char(' ')));
}

// The tasks folder a local worker is given, by the worker's own rule (kwb-worker's
// defaultTasksDir; the remote script's, remoteWorkerScript): KWB_TASKS_DIR, else the install
// tree's share/kernel-workbench/tasks above the program's bin/, else the folder a build tree's
// worker names in the file beside it (PROGRAM.tasks), else this build's source tree.
QString workerTasksDir(const QString& program, const QProcessEnvironment& environment)
{
    if (const QString named = environment.value(QStringLiteral("KWB_TASKS_DIR")); !named.isEmpty())
        return QFileInfo(named).absoluteFilePath();
    const QString exe = QFileInfo(program).canonicalFilePath();
    const QDir programDir = QFileInfo(exe).absoluteDir();
    const QString installed =
        QDir::cleanPath(programDir.absoluteFilePath(QStringLiteral("../share/kernel-workbench/tasks")));
    if (QFileInfo(installed).isDir())
        return installed;
    if (QFile marker(exe + QStringLiteral(".tasks")); marker.open(QIODevice::ReadOnly))
        if (const QString named = QString::fromLocal8Bit(marker.readLine()).trimmed(); !named.isEmpty())
            return named;
#ifdef KWB_SOURCE_DATA_DIR
    return QStringLiteral(KWB_SOURCE_DATA_DIR "/tasks");
#else
    return QDir::current().absoluteFilePath(QStringLiteral("tasks"));
#endif
}

// What the worker needs to read besides the system: its own install or build tree (the folder
// above bin/, where lib/ and share/kernel-workbench/tasks are), its tasks (--tasks-dir,
// KWB_TASKS_DIR, or the source tree's for a build tree), the folders named in its library and
// Python paths, and what the user lists in KWB_SANDBOX_READ_ONLY (colon-separated).
QStringList workerReadOnlyPaths(const QString& program, const QStringList& arguments,
                                const QProcessEnvironment& environment)
{
    QStringList paths;
    const QFileInfo exe(program);
    const QDir programDir = exe.absoluteDir();
    paths << (programDir.dirName() == QLatin1String("bin") ? QFileInfo(programDir.absolutePath()).absolutePath()
                                                           : programDir.absolutePath());
    const QString canonical = exe.canonicalFilePath();
    if (!canonical.isEmpty() && canonical != exe.absoluteFilePath())
        paths << QFileInfo(canonical).absolutePath();
    for (qsizetype i = 0; i + 1 < arguments.size(); ++i)
        if (arguments.at(i) == QLatin1String("--tasks-dir"))
            paths << QFileInfo(arguments.at(i + 1)).absoluteFilePath();
    // Any other file or folder kwb names in the worker's arguments (a test worker's recorded
    // answers): kwb's arguments, not the candidate's.
    for (const QString& argument : arguments)
        if (QDir::isAbsolutePath(argument) && QFileInfo::exists(argument))
            paths << argument;
    for (const QString& variable : readOnlyPathVariables())
        for (const QString& path : environment.value(variable).split(QLatin1Char(':'), Qt::SkipEmptyParts))
            paths << path;
    for (const QString& path :
         qEnvironmentVariable("KWB_SANDBOX_READ_ONLY").split(QLatin1Char(':'), Qt::SkipEmptyParts))
        paths << path;
    return paths;
}

// The extension cache's broker (src/worker/python/extension_cache.py, docs/sandbox.md "The extension
// cache"): one per kwb process, worker program and cache, started at the first sandboxed worker,
// outside every sandbox. Workers see the cache read-only and ask it for entries over a Unix
// socket in a folder bound read-only into them; it runs each build in a sandbox of its own whose
// one writable folder is the build's staging folder, and publishes what was built. It ends with
// kwb (the worker program's parent watch). Returns the socket's path, or "" where it cannot start.
struct BuildBroker
{
    QString socket;
    std::unique_ptr<QTemporaryDir> dir;
};

QString buildBrokerSocket(const QString& program, const QString& bubblewrap, const QString& cacheDir,
                          const QProcessEnvironment& environment)
{
    static QMutex mutex;
    static std::map<QString, BuildBroker> brokers;
    QMutexLocker lock(&mutex);
    const QString key = program + QLatin1Char('\n') + cacheDir + QLatin1Char('\n') + bubblewrap;
    if (const auto found = brokers.find(key); found != brokers.end())
        return found->second.socket;
    BuildBroker& broker = brokers[key];
    broker.dir = std::make_unique<QTemporaryDir>(QDir(QDir::tempPath()).filePath(QStringLiteral("kwb-broker-XXXXXX")));
    if (!broker.dir->isValid())
        return {};
    // The builder's sandbox (SandboxRole::Builder): the worker's view without the GPU, the
    // toolchain's folders on PATH, its home in its private /tmp; its environment otherwise the
    // workers'.
    LocalSandbox paths;
    paths.readOnly = workerReadOnlyPaths(program, {}, environment);
    paths.toolDirs = builderToolDirs(environment.value(QStringLiteral("PATH")));
    paths.extensionCache = cacheDir;
    QJsonArray prefix{bubblewrap};
    for (const QString& argument : bubblewrapArguments(SandboxRole::Builder, paths))
        prefix.append(argument);
    QJsonObject builderEnvironment;
    for (const QString& name : environment.keys())
        builderEnvironment.insert(name, environment.value(name));
    const QString socket = QDir(broker.dir->path()).filePath(QStringLiteral("socket"));
    const QJsonObject config{{QStringLiteral("socket"), socket},
                             {QStringLiteral("cache_dir"), cacheDir},
                             {QStringLiteral("worker"), QFileInfo(program).absoluteFilePath()},
                             {QStringLiteral("builder_prefix"), prefix},
                             {QStringLiteral("environment"), builderEnvironment}};
    // Outside the folder the workers see: it names the builder's sandbox, nothing secret, but
    // the workers need the socket only.
    const QString configPath = broker.dir->path() + QStringLiteral(".json");
    QFile file(configPath);
    if (!file.open(QIODevice::WriteOnly) || file.write(QJsonDocument(config).toJson()) < 0)
        return {};
    file.close();
    const QByteArray programBytes = QFile::encodeName(QFileInfo(program).absoluteFilePath());
    const QByteArray configBytes = QFile::encodeName(configPath);
    char* const argv[] = {const_cast<char*>(programBytes.constData()), const_cast<char*>("--build-broker"),
                          const_cast<char*>(configBytes.constData()), nullptr};
    QList<QByteArray> envStrings;
    for (const QString& name : environment.keys())
        envStrings << (name + QLatin1Char('=') + environment.value(name)).toLocal8Bit();
    std::vector<char*> envp;
    for (QByteArray& entry : envStrings)
        envp.push_back(entry.data());
    envp.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    const int rc = posix_spawn(&pid, argv[0], &actions, nullptr, argv, envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0)
        return {};
    broker.socket = socket;
    return socket;
}

// The worker's variables in its scratch folder (scratchEnvironment()); its home is made empty.
void pointAtScratch(QProcessEnvironment& environment, const QString& scratchDir)
{
    for (const auto& [name, relative] : scratchEnvironment())
        environment.insert(name, relative.isEmpty() ? scratchDir : QDir(scratchDir).filePath(relative));
    QDir().mkpath(environment.value(QStringLiteral("HOME")));
}

// KernelBench-format answers build their load_inline extensions here (docs/sandbox.md): one
// folder for every worker of this user, so an extension built by the compile pool's worker is
// found by the GPU's, and by later runs. KWB_EXTENSION_CACHE in kwb's environment names another.
QString extensionCacheDir(const QProcessEnvironment& environment)
{
    QString dir = environment.value(QStringLiteral("KWB_EXTENSION_CACHE"));
    if (dir.isEmpty())
        dir = QDir(QStandardPaths::writableLocation(QStandardPaths::GenericCacheLocation))
                  .filePath(QStringLiteral("kernel-workbench/extensions"));
    QDir().mkpath(dir);
    return dir;
}

// The worker's hello (first stdout line answering id "probe"), started as program + arguments.
std::optional<int> helloDeviceCount(const QString& program, const QStringList& arguments,
                                    const QProcessEnvironment& environment, QString* why)
{
    QProcess process;
    process.setProgram(program);
    process.setArguments(arguments);
    process.setProcessEnvironment(environment);
    process.start();
    if (!process.waitForStarted(5000)) {
        *why = process.errorString();
        return std::nullopt;
    }
    process.write(R"({"id":"probe","type":"hello"})"
                  "\n");
    process.closeWriteChannel();           // the worker ends at EOF once it has answered
    if (!process.waitForFinished(60000)) { // a real worker loads libtorch first
        process.kill();
        process.waitForFinished(2000);
        *why = QStringLiteral("no answer to hello within 60 s");
        return std::nullopt;
    }
    for (const QByteArray& line : process.readAllStandardOutput().split('\n')) {
        const QJsonObject hello = QJsonDocument::fromJson(line).object();
        if (hello.value(QLatin1String("id")).toString() == QLatin1String("probe") &&
            hello.contains(QLatin1String("cuda_device_count")))
            return hello.value(QLatin1String("cuda_device_count")).toInt();
    }
    const QList<QByteArray> lines = process.readAllStandardError().trimmed().split('\n');
    *why = QStringLiteral("no hello (exit code %1)%2")
               .arg(process.exitCode())
               .arg(lines.isEmpty() || lines.last().isEmpty()
                        ? QString()
                        : QStringLiteral(": ") + QString::fromUtf8(lines.last()).left(300));
    return std::nullopt;
}

SandboxProbe runProbe(const QString& configured, const QString& worker, const QProcessEnvironment& environment,
                      bool checkDevices)
{
    SandboxProbe probe;
    const QString bwrap = bubblewrapProgram(configured);
    if (bwrap.isEmpty()) {
        probe.reason = QStringLiteral("bubblewrap is not installed (no bwrap in PATH)");
        return probe;
    }
    if (!QFileInfo(bwrap).isExecutable()) {
        probe.reason = QStringLiteral("bubblewrap is not installed (%1 is not an executable)").arg(bwrap);
        return probe;
    }
    QTemporaryDir scratch(QDir(QDir::tempPath()).filePath(QStringLiteral("kwb-probe-XXXXXX")));
    if (!scratch.isValid()) {
        probe.reason = QStringLiteral("no scratch folder for the probe: %1").arg(scratch.errorString());
        return probe;
    }
    QString truePath = QStandardPaths::findExecutable(QStringLiteral("true"));
    if (truePath.isEmpty())
        truePath = QStringLiteral("/bin/true");
    QProcess process;
    process.setProgram(bwrap);
    LocalSandbox paths;
    paths.scratchDir = scratch.path();
    process.setArguments(bubblewrapArguments(SandboxRole::Worker, paths) << QStringLiteral("--") << truePath);
    process.setProcessChannelMode(QProcess::MergedChannels);
    process.start();
    if (!process.waitForStarted(5000)) {
        probe.reason = QStringLiteral("%1 does not start: %2").arg(bwrap, process.errorString());
        return probe;
    }
    if (!process.waitForFinished(10000)) {
        process.kill();
        process.waitForFinished(2000);
        probe.reason = QStringLiteral("%1 did not finish a test run within 10 s").arg(bwrap);
        return probe;
    }
    if (process.exitStatus() != QProcess::NormalExit || process.exitCode() != 0) {
        const QList<QByteArray> lines = process.readAll().trimmed().split('\n');
        const QString why = QString::fromUtf8(lines.isEmpty() ? QByteArray() : lines.last().trimmed()).left(300);
        probe.reason = QStringLiteral("bwrap fails here (exit code %1)%2")
                           .arg(process.exitCode())
                           .arg(why.isEmpty() ? QString() : QStringLiteral(": ") + why);
        return probe;
    }
    probe.works = true;
    if (!checkDevices || worker.isEmpty())
        return probe;
    // bwrap runs, but does the GPU? (On the H200, cuInit failed in the sandbox until /proc was
    // writable.) The worker's hello counts the devices CUDA sees: inside as many as outside.
    QString outsideWhy;
    const std::optional<int> outside = helloDeviceCount(worker, {}, environment, &outsideWhy);
    if (!outside || *outside == 0)
        return probe; // nothing to lose in the sandbox (a worker that fails outside fails on its own)
    QProcessEnvironment inside = environment;
    pointAtScratch(inside, scratch.path());
    QString insideWhy;
    paths.readOnly = workerReadOnlyPaths(worker, {}, environment);
    const LocalSandbox& withReadOnly = paths;
    const std::optional<int> sandboxed = helloDeviceCount(
        bwrap, bubblewrapArguments(SandboxRole::Worker, withReadOnly) << QStringLiteral("--") << worker, inside,
        &insideWhy);
    if (!sandboxed) {
        probe.works = false;
        probe.reason = QStringLiteral("the worker does not answer in bwrap: %1").arg(insideWhy);
    } else if (*sandboxed < *outside) {
        probe.works = false;
        probe.reason =
            QStringLiteral("the worker sees %1 GPU(s) in bwrap and %2 outside").arg(*sandboxed).arg(*outside);
    }
    return probe;
}

WorkerLaunchOptions withWorker(WorkerLaunchOptions options, const QString& program,
                               const QProcessEnvironment& environment)
{
    if (options.worker.isEmpty()) {
        options.worker = program.contains(QLatin1Char('/')) ? program : QStandardPaths::findExecutable(program);
        options.workerEnvironment = environment;
    }
    return options;
}

} // namespace

bool sandboxTurnedOff(const QString& sandboxStatus)
{
    return sandboxStatus.startsWith(QLatin1String("none: turned off"));
}

bool hostHasNvidiaGpu()
{
    return !QDir(QStringLiteral("/dev")).entryList({QStringLiteral("nvidia[0-9]*")}, QDir::System).isEmpty() ||
           !QDir(QStringLiteral("/proc/driver/nvidia/gpus")).entryList(QDir::Dirs | QDir::NoDotAndDotDot).isEmpty();
}

// What the probe's answer depends on: bwrap and the worker (path, size, time), the kernel (user
// namespaces), the GPU driver; "" where one of them cannot be read (no disk cache then).
static QString probeCacheKey(const QString& configured, const QString& worker)
{
    const QString bwrap = bubblewrapProgram(configured);
    if (bwrap.isEmpty())
        return {};
    QStringList parts;
    for (const QString& path : {bwrap, worker}) {
        if (path.isEmpty())
            continue;
        const QFileInfo info(path);
        if (!info.exists())
            return {};
        parts << info.canonicalFilePath() << QString::number(info.size())
              << QString::number(info.lastModified().toMSecsSinceEpoch());
    }
    for (const QString& file :
         {QStringLiteral("/proc/sys/kernel/osrelease"), QStringLiteral("/proc/sys/user/max_user_namespaces"),
          QStringLiteral("/proc/sys/kernel/unprivileged_userns_clone"),
          QStringLiteral("/proc/driver/nvidia/version")}) {
        QFile f(file);
        parts << (f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.read(4096)).trimmed() : QStringLiteral("-"));
    }
    parts << QString::number(::getuid());
    return QString::fromLatin1(
        QCryptographicHash::hash(parts.join(QLatin1Char('\n')).toUtf8(), QCryptographicHash::Sha256).toHex());
}

SandboxProbe probeBubblewrapOnce(const QString& bubblewrap, const QString& worker,
                                 const QProcessEnvironment& environment, bool checkDevices)
{
    return runProbe(bubblewrap, worker, environment, checkDevices);
}

SandboxProbe probeBubblewrap(const QString& bubblewrap, const QString& worker, const QProcessEnvironment& environment)
{
    static QMutex mutex;
    static QHash<QString, SandboxProbe> probes;
    QMutexLocker lock(&mutex);
    const bool checkDevices = !worker.isEmpty() && hostHasNvidiaGpu();
    const QString key = bubblewrap + QLatin1Char('\n') + (checkDevices ? worker : QString());
    const auto found = probes.constFind(key);
    if (found != probes.constEnd())
        return found.value();
    // And once per machine state on disk: on a GPU host the probe starts the worker twice (~1.2 s
    // on the H200), which a one-shot `kwb eval` would pay every time.
    const QString diskKey = probeCacheKey(bubblewrap, checkDevices ? worker : QString());
    const QString cacheFile = QDir(QStandardPaths::writableLocation(QStandardPaths::GenericCacheLocation))
                                  .filePath(QStringLiteral("kernel-workbench/sandbox-probe.json"));
    QJsonObject cached;
    if (QFile file(cacheFile); file.open(QIODevice::ReadOnly))
        cached = QJsonDocument::fromJson(file.read(1 << 20)).object();
    if (const QJsonObject entry = cached.value(diskKey).toObject();
        !diskKey.isEmpty() && entry.contains(QLatin1String("works"))) {
        const SandboxProbe probe{entry.value(QLatin1String("works")).toBool(),
                                 entry.value(QLatin1String("reason")).toString()};
        probes.insert(key, probe);
        return probe;
    }
    const SandboxProbe probe = runProbe(bubblewrap, worker, environment, checkDevices);
    probes.insert(key, probe);
    if (!diskKey.isEmpty()) {
        cached.insert(diskKey,
                      QJsonObject{{QStringLiteral("works"), probe.works}, {QStringLiteral("reason"), probe.reason}});
        QDir().mkpath(QFileInfo(cacheFile).absolutePath());
        QSaveFile file(cacheFile);
        if (file.open(QIODevice::WriteOnly)) {
            file.write(QJsonDocument(cached).toJson(QJsonDocument::Compact));
            file.commit();
        }
    }
    return probe;
}

bool osSandboxTurnedOffByEnvironment()
{
    const QString value = qEnvironmentVariable("KWB_OS_SANDBOX").trimmed().toLower();
    return value == QLatin1String("0") || value == QLatin1String("off") || value == QLatin1String("no") ||
           value == QLatin1String("false");
}

QString sandboxStatus(const WorkerLaunchOptions& options)
{
    if (options.target.isRemote())
        return launchWorker(QString(), {}, {}, options).sandbox;
    if (osSandboxTurnedOffByEnvironment())
        return QStringLiteral("none: turned off (KWB_OS_SANDBOX=%1)").arg(qEnvironmentVariable("KWB_OS_SANDBOX"));
    if (!options.osSandbox)
        return QStringLiteral("none: turned off (--no-os-sandbox)");
    const SandboxProbe probe = probeBubblewrap(options.bubblewrap, options.worker, options.workerEnvironment);
    return probe.works ? kSandboxBubblewrap : QStringLiteral("none: ") + probe.reason;
}

QString workerSandboxStatus(const WorkerLimits& limits)
{
    WorkerLaunchOptions options;
    options.osSandbox = limits.osSandbox;
    return sandboxStatus(options);
}

QString shellQuote(const QString& text)
{
    QString quoted = text;
    quoted.replace(QLatin1Char('\''), QStringLiteral("'\\''"));
    return QLatin1Char('\'') + quoted + QLatin1Char('\'');
}

const QStringList& workerEnvironmentNames()
{
    static const QStringList names = {
        QStringLiteral("PATH"),
        QStringLiteral("HOME"), // CUDA's JIT cache lives in ~/.nv
        QStringLiteral("TMPDIR"),
        QStringLiteral("TZ"),
        QStringLiteral("LANG"),
        QStringLiteral("LANGUAGE"),
        QStringLiteral("LD_LIBRARY_PATH"), // libtorch and the toolkit outside the loader's paths
        QStringLiteral("KWB_TASKS_DIR"),
        QStringLiteral("KWB_CUDA_INCLUDE_DIR"),
        QStringLiteral("KWB_EXTENSION_CACHE"),    // KernelBench builds: one folder the pool and the GPU share
        QStringLiteral("KWB_CUDA_SPLIT"),         // 0: a .cu built whole; apart: main.cpp apart (docs/sandbox.md)
        QStringLiteral("KWB_BEFORE_HEADER_NICE"), // builds while the broker makes torch's header (docs/sandbox.md)
        QStringLiteral("KWB_BUILD_PREPARER"),     // 0: no preparer, each builder imports torch (docs/sandbox.md)
        QStringLiteral("ASAN_OPTIONS"),
        QStringLiteral("UBSAN_OPTIONS"),
        QStringLiteral("LSAN_OPTIONS"),
        QStringLiteral("TSAN_OPTIONS")};
    return names;
}

const QStringList& workerEnvironmentPrefixes()
{
    // The device (CUDA_VISIBLE_DEVICES, CUDA_CACHE_PATH, container NVIDIA_*), the libraries'
    // switches (CUBLAS_WORKSPACE_CONFIG, PYTORCH_CUDA_ALLOC_CONF, OMP_NUM_THREADS) and the locale.
    static const QStringList prefixes = {
        QStringLiteral("LC_"),    QStringLiteral("CUDA_"),  QStringLiteral("NVIDIA_"),  QStringLiteral("CUBLAS_"),
        QStringLiteral("CUDNN_"), QStringLiteral("TORCH_"), QStringLiteral("PYTORCH_"), QStringLiteral("OMP_")};
    return prefixes;
}

const QStringList& secretNameWords()
{
    static const QStringList words = {QStringLiteral("KEY"),    QStringLiteral("TOKEN"),
                                      QStringLiteral("SECRET"), QStringLiteral("PASSWORD"),
                                      QStringLiteral("PASSWD"), QStringLiteral("CREDENTIAL")};
    return words;
}

namespace {

// sh for the remote script: `keep NAME` succeeds for what a worker may get (the lists above); the
// script runs it over the login's environment before the spec's env= assignments are exported.
QString remoteKeepFunction()
{
    QStringList names = workerEnvironmentNames();
    QStringList patterns = names;
    for (const QString& prefix : workerEnvironmentPrefixes())
        patterns << prefix + QLatin1Char('*');
    QStringList secrets;
    for (const QString& word : secretNameWords())
        secrets << QLatin1Char('*') + word + QLatin1Char('*');
    return QStringLiteral("keep() { case $(printf '%s' \"$1\" | tr '[:lower:]' '[:upper:]') in %1) return 1;; esac\n"
                          "  case $1 in %2) return 0;; esac; return 1; }\n")
        .arg(secrets.join(QLatin1Char('|')), patterns.join(QLatin1Char('|')));
}

} // namespace

QString remoteWorkerScript()
{
    // The sandbox is decided there (docs/remote-workers.md): sandboxLayout() rendered as sh for the
    // worker and for the extension builds, each into a file of bwrap arguments ($t/worker.args,
    // $t/builder.args; read with `bwrap --args 3`). The build broker runs outside the worker's
    // sandbox there, as here, one per remote worker; kwb-worker ends with the script (its parent
    // watch), the trap ends it sooner.
    static const QString script = QStringLiteral(
        R"SH(# The worker (and its broker) start from the allowlist, as here: the login's other variables (an
# agent's socket, a token) stay out; first, before the script sets its own. A name is letters,
# digits and _; env's other lines are parts of multi-line values.
%4for v in $(env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)=.*/\1/p'); do keep "$v" || unset "$v" 2>/dev/null; done
sandbox=$1; gpu=$2; n=$3; shift 3
while [ "$n" -gt 0 ]; do export "$1"; shift; n=$((n - 1)); done
t=$(mktemp -d "${TMPDIR:-/tmp}/kwb-worker-XXXXXX") || { echo "kwb-worker: no scratch folder on $(uname -n)" >&2; exit 97; }
b=
trap 'if [ -n "$b" ]; then kill "$b" 2>/dev/null; fi; chmod -R u+w "$t" 2>/dev/null; rm -rf "$t"' EXIT
d=$t/scratch
mkdir -p "$d/home" || exit 97
if [ -n "$gpu" ]; then CUDA_VISIBLE_DEVICES=$gpu; export CUDA_VISIBLE_DEVICES; fi
TMPDIR=$d; CUDA_CACHE_PATH=$d/cuda-cache; export TMPDIR CUDA_CACHE_PATH
c=${KWB_EXTENSION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kernel-workbench/extensions}
if mkdir -p "$c" 2>/dev/null; then KWB_EXTENSION_CACHE=$c; export KWB_EXTENSION_CACHE
else echo "kwb-worker: no extension cache folder $c on $(uname -n): this worker builds into its scratch folder" >&2
  c=; unset KWB_EXTENSION_CACHE; fi
w=$1
case $w in */*) ;; *) w=$(command -v "$w") || w=$1;; esac
# Its tasks, by the worker's own rule (workerTasksDir): shown to it and named to it.
k=${KWB_TASKS_DIR-}
r=$(readlink -f "$w") || r=$w
x=$(dirname "$r"); case $x in */bin) if [ -z "$k" ] && [ -d "$(dirname "$x")/share/kernel-workbench/tasks" ]; then k=$(dirname "$x")/share/kernel-workbench/tasks; fi;; esac
if [ -z "$k" ] && [ -f "$r.tasks" ]; then k=$(sed -n 1p "$r.tasks"); fi
if [ -n "$k" ]; then shift; set -- "$w" "$@" --tasks-dir "$k"; fi
s=
B=
if [ "$sandbox" = 1 ]; then B=$(command -v bwrap) || B=; fi
if [ -n "$B" ]; then
  if [ -n "$c" ]; then s=$t/broker; mkdir "$s"; fi
%1  f=$t/worker.args; : > "$f"
%2  f=$t/builder.args; : > "$f"
%3  "$B" --args 3 -- true 3<"$t/worker.args" >/dev/null 2>&1 || B=
fi
if [ -n "$B" ]; then
  shift; set -- "$w" "$@"
  j() { case $1 in *[[:cntrl:]]*) return 1;; esac; printf '"%s"' "$(printf '%s' "$1" | sed 's/[\\"]/\\&/g')"; }
  x='f=$1; shift; exec "$0" --args 3 "$@" 3<"$f"'
  if [ -n "$s" ] && j1=$(j "$s/socket") && j2=$(j "$c") && j3=$(j "$w") && j4=$(j "$x") && j5=$(j "$B") && j6=$(j "$t/builder.args") &&
     printf '{"socket":%s,"cache_dir":%s,"worker":%s,"builder_prefix":["/bin/sh","-c",%s,%s,%s]}\n' "$j1" "$j2" "$j3" "$j4" "$j5" "$j6" > "$t/broker.json"; then
    "$w" --build-broker "$t/broker.json" </dev/null >/dev/null &
    b=$!
    KWB_BUILD_BROKER=$s/socket; export KWB_BUILD_BROKER
  elif [ -n "$s" ]; then echo "kwb-worker: no extension build service on $(uname -n): a path holds a control character" >&2
  fi
  "$B" --args 3 -- "$@" 3<"$t/worker.args"
else
  if [ "$sandbox" = 1 ]; then echo "kwb-worker: warning: the worker runs without the OS sandbox on $(uname -n): bwrap is missing or fails there" >&2
    set -- "$@" --refuse-native-code "bwrap is missing or fails on $(uname -n)"; fi
  "$@"
fi
)SH");
    return script.arg(remoteLayoutFunctions(), remoteLayoutScript(SandboxRole::Worker),
                      remoteLayoutScript(SandboxRole::Builder), remoteKeepFunction());
}

namespace {

QString programFromEnvironment(const char* variable, const QString& fallback)
{
    const QString configured = qEnvironmentVariable(variable);
    return configured.isEmpty() ? fallback : configured;
}

WorkerLaunch launchRemote(const QStringList& arguments, const QProcessEnvironment& environment,
                          const WorkerLaunchOptions& options)
{
    const WorkerTarget& target = options.target;
    WorkerLaunch launch;
    launch.remote = true;
    launch.exitCodeCarriesSignal = true;
    const bool sandbox = options.osSandbox && !osSandboxTurnedOffByEnvironment();
    launch.sandbox =
        sandbox
            ? kSandboxRemote
            : (osSandboxTurnedOffByEnvironment()
                   ? QStringLiteral("none: turned off (KWB_OS_SANDBOX=%1)").arg(qEnvironmentVariable("KWB_OS_SANDBOX"))
                   : QStringLiteral("none: turned off (--no-os-sandbox)"));
    // This machine's --tasks-dir means nothing there: the remote worker uses its own tasks.
    QStringList workerArguments;
    for (qsizetype i = 0; i < arguments.size(); ++i) {
        if (arguments.at(i) == QLatin1String("--tasks-dir") && i + 1 < arguments.size()) {
            ++i;
            continue;
        }
        workerArguments << arguments.at(i);
    }
    // The supervisor reads only /proc of this machine: the worker watches its own host limits.
    const auto limit = [](qint64 value) { return value > 0 ? QString::number(value) : QStringLiteral("default"); };
    workerArguments << QStringLiteral("--max-host-memory") << limit(options.hostMemoryBytes)
                    << QStringLiteral("--max-host-threads") << limit(options.hostThreads)
                    << QStringLiteral("--end-on-stdin-eof");
    const QStringList scriptArguments =
        QStringList{QStringLiteral("kwb-worker"), sandbox ? QStringLiteral("1") : QStringLiteral("0"),
                    target.kind == WorkerTarget::Kind::Slurm ? QString() : QString::number(target.gpu),
                    QString::number(target.environment.size())} +
        target.environment + QStringList{target.remoteWorker} + workerArguments;
    if (target.kind == WorkerTarget::Kind::Ssh) {
        // One string for the remote login shell; the script runs under sh whatever that shell is.
        QStringList command{QStringLiteral("sh"), QStringLiteral("-c"), shellQuote(remoteWorkerScript())};
        for (const QString& argument : scriptArguments)
            command << shellQuote(argument);
        launch.program = programFromEnvironment("KWB_SSH", QStringLiteral("ssh"));
        launch.arguments =
            QStringList{QStringLiteral("-T"), QStringLiteral("-o"), QStringLiteral("BatchMode=yes"),
                        // A host that stops answering counts as lost after ~15 s.
                        QStringLiteral("-o"), QStringLiteral("ServerAliveInterval=5"), QStringLiteral("-o"),
                        QStringLiteral("ServerAliveCountMax=3"), target.host, command.join(QLatin1Char(' '))};
        // The user's ssh (agent, config) runs here; nothing of this environment is sent there.
        launch.environment = QProcessEnvironment::systemEnvironment();
        return launch;
    }
    launch.program = programFromEnvironment("KWB_SRUN", QStringLiteral("srun"));
    launch.arguments =
        QStringList{QStringLiteral("--partition=") + target.host, QStringLiteral("--ntasks=1"),
                    QStringLiteral("--gpus=1"), QStringLiteral("--quiet"), QStringLiteral("--kill-on-bad-exit=1")};
    if (!target.timeLimit.isEmpty())
        launch.arguments << QStringLiteral("--time=") + target.timeLimit;
    launch.arguments << QStringLiteral("sh") << QStringLiteral("-c") << remoteWorkerScript() << scriptArguments;
    // srun hands its environment to the worker: the worker's own, plus what srun needs to find
    // its allocation (SLURM_*) and its user.
    launch.environment = environment;
    const QProcessEnvironment system = QProcessEnvironment::systemEnvironment();
    for (const QString& name : system.keys())
        // Not SLURM_JWT: srun hands its environment to the job, and a token must not reach a candidate.
        if ((name.startsWith(QLatin1String("SLURM_")) && name != QLatin1String("SLURM_JWT")) ||
            name == QLatin1String("USER") || name == QLatin1String("LOGNAME"))
            launch.environment.insert(name, system.value(name));
    return launch;
}

} // namespace

WorkerLaunch launchWorker(const QString& program, const QStringList& arguments, const QProcessEnvironment& environment,
                          const WorkerLaunchOptions& options)
{
    if (options.target.isRemote())
        return launchRemote(arguments, environment, options);
    WorkerLaunch launch;
    launch.program = program;
    QStringList workerArguments = arguments;
    if (!options.gpuQuietLock.isEmpty())
        workerArguments << QStringLiteral("--gpu-quiet-lock") << options.gpuQuietLock;
    launch.arguments = workerArguments;
    launch.environment = environment;
    const QString extensions = extensionCacheDir(environment);
    launch.environment.insert(QStringLiteral("KWB_EXTENSION_CACHE"), extensions);
    launch.sandbox = options.scratchDir.isEmpty() && options.osSandbox && !osSandboxTurnedOffByEnvironment()
                         ? QStringLiteral("none: no scratch folder for the worker")
                         : sandboxStatus(withWorker(options, program, environment));
    if (launch.sandbox != kSandboxBubblewrap) {
        // No sandbox, no native model code, unless the user turned the sandbox off
        // (docs/security.md): the worker refuses KernelBench-format answers, saying why.
        if (!sandboxTurnedOff(launch.sandbox))
            launch.arguments << QStringLiteral("--refuse-native-code") << launch.sandbox.mid(6);
        return launch;
    }
    // A program that cannot start is started as it is, so that the failure reads as QProcess's
    // "could not start", not as bwrap's exit code.
    const QString resolved = program.contains(QLatin1Char('/')) ? program : QStandardPaths::findExecutable(program);
    if (resolved.isEmpty() || !QFileInfo(resolved).isExecutable() || QFileInfo(resolved).isDir())
        return launch;
    launch.sandboxed = true;
    launch.exitCodeCarriesSignal = true;
    launch.program = bubblewrapProgram(options.bubblewrap);
    // The extension cache is read-only: builds go through the broker, which alone publishes.
    // The worker is told its tasks folder, the one the sandbox shows it: left to choose, a worker
    // from another build than kwb's picks its own build's folder, which the sandbox hides.
    if (!workerArguments.contains(QStringLiteral("--tasks-dir")))
        workerArguments << QStringLiteral("--tasks-dir") << workerTasksDir(resolved, environment);
    LocalSandbox paths;
    paths.scratchDir = options.scratchDir; // also the working folder: paths relative to kwb's are made absolute below
    paths.readOnly = workerReadOnlyPaths(program, workerArguments, environment);
    paths.extensionCache = extensions;
    if (const QString broker = buildBrokerSocket(resolved, launch.program, extensions, launch.environment);
        !broker.isEmpty()) {
        paths.brokerDir = QFileInfo(broker).absolutePath();
        launch.environment.insert(QStringLiteral("KWB_BUILD_BROKER"), broker);
    }
    // Visible under / already where the lock directory is an ordinary folder; bound on its own so
    // that one under a path the sandbox replaces (/dev/shm) is the same file inside. Read-only:
    // flock needs no more.
    if (!options.gpuQuietLock.isEmpty()) {
        paths.exact << options.gpuQuietLock;
        // Its writers-first gate and its evaluations' turn, where the supervisor made them (bwrap
        // refuses a missing source).
        for (const QString& beside :
             {GpuLeases::quietIntentPath(options.gpuQuietLock), GpuLeases::quietTurnPath(options.gpuQuietLock)})
            if (QFileInfo::exists(beside))
                paths.exact << beside;
    }
    launch.arguments = bubblewrapArguments(SandboxRole::Worker, paths);
    for (qsizetype i = 0; i + 1 < workerArguments.size(); ++i)
        if (workerArguments.at(i) == QLatin1String("--tasks-dir"))
            workerArguments[i + 1] = QFileInfo(workerArguments.at(i + 1)).absoluteFilePath();
    launch.arguments << QStringLiteral("--") << program;
    launch.arguments += workerArguments;
    pointAtScratch(launch.environment, options.scratchDir);
    return launch;
}

int signalFromWrappedExitCode(int exitCode)
{
    return exitCode > 128 && exitCode < 128 + 65 ? exitCode - 128 : 0;
}

QString sandboxWarning(const QString& sandboxStatus)
{
    if (sandboxStatus == kSandboxBubblewrap || sandboxStatus == kSandboxRemote)
        return {}; // a remote host that cannot sandbox says so on the worker's stderr
    const QString reason = sandboxStatus.startsWith(QLatin1String("none: ")) ? sandboxStatus.mid(6) : sandboxStatus;
    return QStringLiteral("the worker runs without the OS sandbox (network and files open to it): ") + reason;
}

} // namespace kwb
