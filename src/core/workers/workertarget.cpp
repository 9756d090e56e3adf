#include "core/workers/workertarget.h"

#include "core/workers/gpulease.h"

#include <QRegularExpression>
#include <QSet>
#include <QStringList>

namespace kwb {

namespace {

constexpr int kMaxGpusPerPart = 64;

bool fail(QString* error, const QString& message)
{
    if (error)
        *error = QStringLiteral("--workers: ") + message;
    return false;
}

bool parseGpus(const QString& text, const QString& part, QList<int>* gpus, QString* error)
{
    if (text.trimmed().isEmpty())
        return fail(error, QStringLiteral("'%1' names no GPU (e.g. 0,1)").arg(part));
    QSet<int> seen;
    for (const QString& item : text.split(QLatin1Char(','))) {
        bool ok = false;
        const int gpu = item.trimmed().toInt(&ok);
        if (!ok || gpu < 0 || gpu >= 1024)
            return fail(error, QStringLiteral("'%1': '%2' is not a GPU number (0, 1, …)").arg(part, item.trimmed()));
        if (seen.contains(gpu))
            return fail(error, QStringLiteral("'%1' names GPU %2 twice").arg(part).arg(gpu));
        seen.insert(gpu);
        gpus->append(gpu);
    }
    return true;
}

// A host as ssh takes it: an alias or [user@]name, nothing ssh would read as an option or a shell
// would split.
bool validHost(const QString& host)
{
    static const QRegularExpression pattern(QStringLiteral("^[A-Za-z0-9_][A-Za-z0-9_.@-]*$"));
    return pattern.match(host).hasMatch();
}

bool validWorkerPath(const QString& path)
{
    return !path.isEmpty() && !path.startsWith(QLatin1Char('-')) && !path.contains(QLatin1Char('\n'));
}

// "NAME=VALUE" with NAME a shell variable name; VALUE anything but a newline (it is quoted there).
bool parseEnvironmentAssignment(const QString& text, const QString& part, QStringList* environment, QString* error)
{
    static const QRegularExpression name(QStringLiteral("^[A-Za-z_][A-Za-z0-9_]*$"));
    const qsizetype eq = text.indexOf(QLatin1Char('='));
    if (eq <= 0 || !name.match(text.left(eq)).hasMatch() || text.contains(QLatin1Char('\n')))
        return fail(error, QStringLiteral("'%1': env=%2 is not NAME=VALUE (e.g. env=KWB_EXTENSION_CACHE=/scratch/kwb)")
                               .arg(part, text));
    environment->append(text);
    return true;
}

bool parsePart(const QString& part, const QList<int>& defaultLocalGpus, QList<WorkerTarget>* targets, QString* error)
{
    if (part == QLatin1String("local")) {
        if (defaultLocalGpus.isEmpty())
            return fail(error, QStringLiteral("'local' and no local GPU to use"));
        for (int gpu : defaultLocalGpus)
            targets->append(WorkerTarget::local(gpu));
        return true;
    }
    if (part.startsWith(QLatin1String("local:"))) {
        QList<int> gpus;
        if (!parseGpus(part.mid(6), part, &gpus, error))
            return false;
        for (int gpu : gpus)
            targets->append(WorkerTarget::local(gpu));
        return true;
    }
    if (part.startsWith(QLatin1String("ssh:"))) {
        const QStringList fields = part.mid(4).split(QLatin1Char(':'));
        if (fields.size() < 2)
            return fail(error,
                        QStringLiteral("'%1': ssh:HOST:GPUS needs a host and GPUs, e.g. ssh:gpu-box:0,1").arg(part));
        const QString host = fields.at(0).trimmed();
        if (!validHost(host))
            return fail(error, QStringLiteral("'%1': '%2' is not a host name or ssh alias").arg(part, host));
        QList<int> gpus;
        if (!parseGpus(fields.at(1), part, &gpus, error))
            return false;
        // Options split at ':', but a value may hold ':' (a PATH-like env value, a worker path):
        // a field that starts no option continues the one before.
        QStringList options;
        for (qsizetype i = 2; i < fields.size(); ++i) {
            const QString& field = fields.at(i);
            if (options.isEmpty() || field.startsWith(QLatin1String("worker=")) ||
                field.startsWith(QLatin1String("env=")))
                options.append(field);
            else
                options.last() += QLatin1Char(':') + field;
        }
        QString worker = QStringLiteral("kwb-worker");
        QStringList environment;
        for (const QString& option : options) {
            if (option.startsWith(QLatin1String("env="))) {
                if (!parseEnvironmentAssignment(option.mid(4), part, &environment, error))
                    return false;
                continue;
            }
            if (!option.startsWith(QLatin1String("worker=")) || !validWorkerPath(option.mid(7)))
                return fail(
                    error,
                    QStringLiteral("'%1': unknown option '%2' (known: worker=PATH, env=NAME=VALUE)").arg(part, option));
            worker = option.mid(7);
        }
        for (int gpu : gpus) {
            WorkerTarget target;
            target.kind = WorkerTarget::Kind::Ssh;
            target.host = host;
            target.gpu = gpu;
            target.remoteWorker = worker;
            target.environment = environment;
            targets->append(target);
        }
        return true;
    }
    if (part.startsWith(QLatin1String("slurm:"))) {
        QString partition;
        QString time;
        QString worker = QStringLiteral("kwb-worker");
        QStringList environment;
        int count = 1;
        for (const QString& item : part.mid(6).split(QLatin1Char(','))) {
            const qsizetype eq = item.indexOf(QLatin1Char('='));
            const QString key = item.left(eq).trimmed();
            const QString value = eq < 0 ? QString() : item.mid(eq + 1).trimmed();
            if (eq < 0 || value.isEmpty())
                return fail(error,
                            QStringLiteral("'%1': '%2' is not KEY=VALUE (keys: partition, gpus, time, worker, env)")
                                .arg(part, item));
            if (key == QLatin1String("partition")) {
                if (!validHost(value))
                    return fail(error, QStringLiteral("'%1': '%2' is not a partition name").arg(part, value));
                partition = value;
            } else if (key == QLatin1String("gpus")) {
                bool ok = false;
                count = value.toInt(&ok);
                if (!ok || count < 1 || count > kMaxGpusPerPart)
                    return fail(error, QStringLiteral("'%1': gpus must be 1 to %2, got '%3'")
                                           .arg(part)
                                           .arg(kMaxGpusPerPart)
                                           .arg(value));
            } else if (key == QLatin1String("time")) {
                // Slurm's forms: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS.
                static const QRegularExpression pattern(QStringLiteral("^(\\d+-)?\\d+(:\\d+){0,2}$"));
                if (!pattern.match(value).hasMatch())
                    return fail(error,
                                QStringLiteral("'%1': time '%2' is not a Slurm time (MINUTES, HH:MM:SS, D-HH:MM)")
                                    .arg(part, value));
                time = value;
            } else if (key == QLatin1String("worker")) {
                if (!validWorkerPath(value))
                    return fail(error, QStringLiteral("'%1': '%2' is not a program path").arg(part, value));
                worker = value;
            } else if (key == QLatin1String("env")) {
                if (!parseEnvironmentAssignment(value, part, &environment, error))
                    return false;
            } else {
                return fail(
                    error,
                    QStringLiteral("'%1': unknown key '%2' (keys: partition, gpus, time, worker, env)").arg(part, key));
            }
        }
        if (partition.isEmpty())
            return fail(error, QStringLiteral("'%1' needs partition=NAME").arg(part));
        for (int slot = 0; slot < count; ++slot) {
            WorkerTarget target;
            target.kind = WorkerTarget::Kind::Slurm;
            target.host = partition;
            target.gpu = slot;
            target.timeLimit = time;
            target.remoteWorker = worker;
            target.environment = environment;
            targets->append(target);
        }
        return true;
    }
    return fail(error, QStringLiteral("'%1' is not a worker spec (local, local:0,1, ssh:HOST:0,1, "
                                      "slurm:partition=NAME,gpus=N,time=T)")
                           .arg(part));
}

} // namespace

WorkerTarget WorkerTarget::local(int gpu)
{
    WorkerTarget target;
    target.gpu = gpu;
    return target;
}

QString WorkerTarget::location() const
{
    switch (kind) {
    case Kind::Local: return QStringLiteral("local:%1").arg(gpu);
    case Kind::Ssh: return QStringLiteral("%1:%2").arg(host).arg(gpu);
    case Kind::Slurm: return QStringLiteral("slurm-%1:%2").arg(host).arg(gpu);
    }
    return {};
}

QString WorkerTarget::leaseKey() const
{
    switch (kind) {
    case Kind::Local: return {};
    case Kind::Ssh: return remoteGpuKey(QStringLiteral("ssh"), host, gpu);
    case Kind::Slurm: return remoteGpuKey(QStringLiteral("slurm"), host, gpu);
    }
    return {};
}

std::optional<QList<WorkerTarget>> parseWorkerSpec(const QString& spec, const QList<int>& defaultLocalGpus,
                                                   QString* error)
{
    QList<WorkerTarget> targets;
    const QStringList parts = spec.split(QLatin1Char(';'), Qt::SkipEmptyParts);
    if (parts.isEmpty()) {
        fail(error, QStringLiteral("empty (e.g. local, ssh:gpu-box:0,1, slurm:partition=a100,gpus=4)"));
        return std::nullopt;
    }
    for (const QString& raw : parts)
        if (!parsePart(raw.trimmed(), defaultLocalGpus, &targets, error))
            return std::nullopt;
    for (qsizetype i = 0; i < targets.size(); ++i)
        for (qsizetype j = i + 1; j < targets.size(); ++j)
            if (targets.at(i).location() == targets.at(j).location()) {
                fail(error, QStringLiteral("GPU %1 is named twice").arg(targets.at(i).location()));
                return std::nullopt;
            }
    return targets;
}

} // namespace kwb
