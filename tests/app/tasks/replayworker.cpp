// A stand-in for kwb-worker that answers `tasks` and `analyze` with responses recorded from the
// real worker (data/record.py), so the tasks page is tested with real task files and real
// analyses on machines without libtorch. tests/unit/fakeworker.cpp lists two bare tasks only.
//
//   kwb-replayworker --tasks data/tasks.json --analyses data/analyze.json
//                    [--crash-on-analyze ID] [--hang-on-analyze ID] [--forget ID] [--hello-delay MS]
//
// hello answers protocol 1; tasks answers the recorded response; analyze answers the recorded
// response of that task (unknown_task for any other). --crash-on-analyze dies by SIGSEGV when
// asked to analyse ID (a worker that crashes mid-request), --hang-on-analyze never answers it,
// --forget answers unknown_task for it.
// Without --tasks/--analyses it reads $KWB_REPLAY_TASKS and $KWB_REPLAY_ANALYSES.
// Anything else answers unknown_type. EOF ends it with code 0, like the real worker.

#include <QByteArray>
#include <QFile>
#include <QHash>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <string>
#include <thread>
#include <unistd.h>

namespace {

void writeLine(const QJsonObject& object)
{
    QByteArray line = QJsonDocument(object).toJson(QJsonDocument::Compact);
    line.append('\n');
    std::fwrite(line.constData(), 1, size_t(line.size()), stdout);
    std::fflush(stdout);
}

QJsonDocument readJson(const QString& path)
{
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        std::fprintf(stderr, "replayworker: cannot read %s\n", qPrintable(path));
        std::exit(2);
    }
    QJsonParseError error;
    const QJsonDocument document = QJsonDocument::fromJson(file.readAll(), &error);
    if (error.error != QJsonParseError::NoError) {
        std::fprintf(stderr, "replayworker: %s: %s\n", qPrintable(path), qPrintable(error.errorString()));
        std::exit(2);
    }
    return document;
}

// The recorded response with this request's id and type.
QJsonObject replay(QJsonObject recorded, const QJsonObject& request)
{
    recorded.insert(QStringLiteral("id"), request.value(QStringLiteral("id")));
    recorded.insert(QStringLiteral("type"), request.value(QStringLiteral("type")));
    return recorded;
}

QJsonObject error(const QJsonObject& request, const QString& code, const QString& message)
{
    return QJsonObject{
        {QStringLiteral("id"), request.value(QStringLiteral("id"))},
        {QStringLiteral("type"), request.value(QStringLiteral("type"))},
        {QStringLiteral("ok"), false},
        {QStringLiteral("error"), QJsonObject{{QStringLiteral("code"), code}, {QStringLiteral("message"), message}}}};
}

} // namespace

int main(int argc, char** argv)
{
    QString tasksPath, analysesPath, crashOn, hangOn, forget;
    int helloDelayMs = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const QString name = QString::fromLocal8Bit(argv[i]);
        const QString value = QString::fromLocal8Bit(argv[i + 1]);
        if (name == QLatin1String("--tasks"))
            tasksPath = value;
        else if (name == QLatin1String("--analyses"))
            analysesPath = value;
        else if (name == QLatin1String("--crash-on-analyze"))
            crashOn = value;
        else if (name == QLatin1String("--hang-on-analyze"))
            hangOn = value;
        else if (name == QLatin1String("--forget"))
            forget = value;
        else if (name == QLatin1String("--hello-delay"))
            helloDelayMs = value.toInt();
    }
    // A program started by path alone (the window's --worker) takes its data from the environment.
    if (tasksPath.isEmpty())
        tasksPath = qEnvironmentVariable("KWB_REPLAY_TASKS");
    if (analysesPath.isEmpty())
        analysesPath = qEnvironmentVariable("KWB_REPLAY_ANALYSES");
    const QJsonObject tasks = tasksPath.isEmpty() ? QJsonObject() : readJson(tasksPath).object();
    QHash<QString, QJsonObject> analyses;
    if (!analysesPath.isEmpty())
        for (const QJsonValue& v : readJson(analysesPath).array())
            analyses.insert(v.toObject().value(QStringLiteral("task")).toString(), v.toObject());

    std::string line;
    while (std::getline(std::cin, line)) {
        const QJsonObject request = QJsonDocument::fromJson(QByteArray::fromStdString(line)).object();
        const QString type = request.value(QStringLiteral("type")).toString();
        if (type == QLatin1String("hello")) {
            std::this_thread::sleep_for(std::chrono::milliseconds(helloDelayMs));
            writeLine(QJsonObject{{QStringLiteral("id"), request.value(QStringLiteral("id"))},
                                  {QStringLiteral("type"), type},
                                  {QStringLiteral("ok"), true},
                                  {QStringLiteral("protocol"), 1},
                                  {QStringLiteral("worker"), QStringLiteral("replay-0.1")},
                                  {QStringLiteral("cuda_device_count"), 0}});
        } else if (type == QLatin1String("tasks")) {
            writeLine(tasks.isEmpty() ? error(request, QStringLiteral("internal"), QStringLiteral("no --tasks given"))
                                      : replay(tasks, request));
        } else if (type == QLatin1String("analyze")) {
            const QString id = request.value(QStringLiteral("task")).toString();
            if (id == crashOn) {
                std::signal(SIGSEGV, SIG_DFL);
                // A real fault: in the OS sandbox the worker is PID 1, which its own raise() does not end.
                volatile std::uintptr_t unmapped = 8;
                *reinterpret_cast<volatile int*>(std::uintptr_t(unmapped)) = 0;
                std::raise(SIGSEGV);
            }
            if (id == hangOn)
                for (;;)
                    ::pause();
            const auto it = id == forget ? analyses.cend() : analyses.constFind(id);
            writeLine(it == analyses.cend()
                          ? error(request, QStringLiteral("unknown_task"), QStringLiteral("no task ") + id)
                          : replay(*it, request));
        } else if (type == QLatin1String("shutdown")) {
            writeLine(QJsonObject{{QStringLiteral("id"), request.value(QStringLiteral("id"))},
                                  {QStringLiteral("type"), type},
                                  {QStringLiteral("ok"), true}});
            return 0;
        } else {
            writeLine(error(request, QStringLiteral("unknown_type"), QStringLiteral("unknown type ") + type));
        }
    }
    return 0;
}
