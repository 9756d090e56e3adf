#include "workerlocator.h"

#include <QCoreApplication>
#include <QDir>
#include <QFileInfo>

namespace kwb {

namespace {

// Empty when `path` names an executable regular file, else why not.
QString whyNotExecutable(const QString& path)
{
    const QFileInfo info(path);
    if (!info.exists())
        return QStringLiteral("%1 does not exist").arg(path);
    if (info.isDir())
        return QStringLiteral("%1 is a directory").arg(path);
    if (!info.isExecutable())
        return QStringLiteral("%1 is not executable").arg(path);
    return {};
}

WorkerLocator::Result fromPath(const QString& path, const QString& origin)
{
    WorkerLocator::Result result;
    const QString why = whyNotExecutable(path);
    if (why.isEmpty()) {
        result.program = QFileInfo(path).absoluteFilePath();
        result.origin = origin;
    } else {
        result.error = QStringLiteral("kwb-worker given by %1 is unusable: %2").arg(origin, why);
    }
    return result;
}

} // namespace

WorkerLocator::Result WorkerLocator::locate(const QString& explicitPath)
{
    const QString applicationDir = QCoreApplication::instance() ? QCoreApplication::applicationDirPath() : QString();
    return locate(explicitPath, qEnvironmentVariable(kEnvironmentVariable), applicationDir);
}

WorkerLocator::Result WorkerLocator::locate(const QString& explicitPath, const QString& environmentValue,
                                            const QString& applicationDir)
{
    if (!explicitPath.isEmpty())
        return fromPath(explicitPath, QStringLiteral("--worker"));
    if (!environmentValue.isEmpty())
        return fromPath(environmentValue, QStringLiteral("$KWB_WORKER"));

    Result result;
    if (!applicationDir.isEmpty()) {
        const QString candidate = QDir(applicationDir).filePath(QLatin1String(kWorkerName));
        if (whyNotExecutable(candidate).isEmpty()) {
            result.program = QFileInfo(candidate).absoluteFilePath();
            result.origin = QStringLiteral("next to the program");
            return result;
        }
        result.error = QStringLiteral("kwb-worker not found: $KWB_WORKER is not set and %1 is not an "
                                      "executable file (build the worker, or set KWB_WORKER or "
                                      "--worker to its path)")
                           .arg(candidate);
    } else {
        result.error = QStringLiteral("kwb-worker not found: $KWB_WORKER is not set and the program's "
                                      "own directory is unknown");
    }
    return result;
}

} // namespace kwb
