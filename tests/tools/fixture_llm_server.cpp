// kwb-fixture-llm: an OpenAI-compatible test server that answers like a weak but improving model,
// with the project's own candidate fixtures, so a whole study (every regime, 30 tasks) can run
// end to end on a GPU without a model. Built on the tests' ScriptedLlmServer (127.0.0.1 only).
//
// How it answers a chat request (the prompts are this project's templates, prompts/):
// - An answer request ("... answer for task L2/1 ...", every generator and retry template ends so)
//   gets, for the k-th answer the server has given for that task (k = 0, 1, ...; a request for n
//   choices takes n numbers):
//     k >= need(task): the task's reference candidate (tests/fixtures/candidates/reference);
//     k <  need(task): a failing candidate: a real failing fixture written for the task where one
//                      exists (failing/, manifest task), otherwise the reference broken in one of
//                      three ways (a compile error, a 1 % error in the result, an untagged block).
//   need(task) is a stable hash of the task id and --seed, from 0 to --max-need (default 4): the
//   task needs that many failed tries before a right one, so more samples and more turns solve more
//   tasks, as the study saw. Prompts in the pilot-v1 wording (which ask for tiled CUDA) need two more.
// - Any other request (analyzer, researcher, triager, critic) gets a short plain-text note.
// Restart the server (or change --seed) between runs: the per-task counters are its only state.
// With --stateless there is no counter: k is a draw from 0 to max-need + 2, a stable hash of the
// task, --seed, the request's seed (+ i for choice i) and the prompt, so an answer is a function
// of what was asked. Runs that ask alike get the same answers: the runs of a `kwb sweep` (paired
// seeds) draw the same first samples, and a sweep against one server needs no restart. Each
// answer is then right with chance (max-need + 3 - need) / (max-need + 3): more samples and more
// turns still solve more tasks.

#include "../unit/scriptedllmserver.h"

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QCryptographicHash>
#include <QDir>
#include <QFile>
#include <QHash>
#include <QJsonArray>
#include <QRegularExpression>
#include <QTextStream>

#include <cstdio>

namespace {

using kwb::test::ScriptedLlmServer;

QString readText(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

/// "L2/1" -> "L2_01"
QString fileStem(const QString& task)
{
    const QStringList parts = task.mid(1).split(QLatin1Char('/'));
    if (parts.size() != 2)
        return {};
    return QStringLiteral("L%1_%2").arg(parts[0]).arg(parts[1].toInt(), 2, 10, QLatin1Char('0'));
}

int stableHash(const QString& text)
{
    const QByteArray d = QCryptographicHash::hash(text.toUtf8(), QCryptographicHash::Sha256);
    return int((quint8(d[0]) << 8) | quint8(d[1]));
}

/// The reference broken in a way that is typical of a weak model.
QString breakReference(const QString& reference, int kind)
{
    QString answer = reference;
    switch (kind % 3) {
    case 0: { // a compile error: in the cuda block if there is one, else in the host code
        const qsizetype cuda = answer.indexOf(QLatin1String("```cuda\n"));
        if (cuda >= 0) {
            answer.insert(cuda + 8, QStringLiteral("this line is not CUDA\n"));
        } else {
            const qsizetype ret = answer.lastIndexOf(QLatin1String("\n    return "));
            if (ret >= 0)
                answer.insert(ret, QStringLiteral("\n    y = undefined_helper(1)"));
        }
        return answer;
    }
    case 1: { // a wrong result: off by 1 %
        static const QRegularExpression lastReturn(QStringLiteral("\\n    return ([^\\n]+)\\n```(?![\\s\\S]*```python)"));
        const QRegularExpressionMatch m = lastReturn.match(answer);
        if (m.hasMatch()) {
            answer.replace(m.capturedStart(1), m.capturedLength(1), QStringLiteral("(%1) * 1.01").arg(m.captured(1)));
            return answer;
        }
        return breakReference(reference, 2); // no plain last return line to change
    }
    default: // a format error: the python block loses its tag
        answer.replace(QLatin1String("```python\n"), QLatin1String("```\n"));
        return answer;
    }
}

} // namespace

int main(int argc, char** argv)
{
    QCoreApplication app(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("kwb-fixture-llm"));
    QCommandLineParser parser;
    parser.setApplicationDescription(QStringLiteral(
        "An OpenAI-compatible test server answering with the project's candidate fixtures (see the source's "
        "header for the policy). Prints its base URL on stdout, then serves until killed."));
    parser.addHelpOption();
    const QCommandLineOption candidatesOption(QStringLiteral("candidates"), QStringLiteral("tests/fixtures/candidates"),
                                              QStringLiteral("DIR"));
    const QCommandLineOption seedOption(QStringLiteral("seed"), QStringLiteral("policy seed (default 1)"),
                                        QStringLiteral("N"), QStringLiteral("1"));
    const QCommandLineOption maxNeedOption(QStringLiteral("max-need"),
                                           QStringLiteral("most failed answers before a right one (default 4)"),
                                           QStringLiteral("N"), QStringLiteral("4"));
    const QCommandLineOption delayOption(QStringLiteral("delay-ms"), QStringLiteral("latency of each answer (default 30)"),
                                         QStringLiteral("MS"), QStringLiteral("30"));
    const QCommandLineOption logOption(QStringLiteral("log"), QStringLiteral("append one line per answer to FILE"),
                                       QStringLiteral("FILE"));
    const QCommandLineOption statelessOption(
        QStringLiteral("stateless"),
        QStringLiteral("answers are a function of the task, --seed, the request's seed and the prompt (no per-task "
                       "counter): for kwb sweep, whose runs ask with the same seeds"));
    parser.addOptions({candidatesOption, seedOption, maxNeedOption, delayOption, logOption, statelessOption});
    parser.process(app);

    const QString dir = parser.value(candidatesOption);
    if (dir.isEmpty() || !QDir(dir + QStringLiteral("/reference")).exists()) {
        std::fprintf(stderr, "kwb-fixture-llm: --candidates DIR must hold reference/ (tests/fixtures/candidates)\n");
        return 2;
    }
    const int seed = parser.value(seedOption).toInt();
    const int maxNeed = std::max(0, parser.value(maxNeedOption).toInt());
    const int delayMs = std::max(0, parser.value(delayOption).toInt());
    const bool stateless = parser.isSet(statelessOption);

    // Real failing fixtures by task, from the manifest's file/task pairs.
    QHash<QString, QStringList> failingByTask;
    {
        const QString manifest = readText(dir + QStringLiteral("/manifest.toml"));
        static const QRegularExpression entry(
            QStringLiteral("file = \"(failing/[^\"]+)\"\\s*\\ntask = \"([^\"]+)\"\\s*\\nexpect = \"(compile_error|incorrect|format_error|runtime_error)\""));
        for (auto it = entry.globalMatch(manifest); it.hasNext();) {
            const QRegularExpressionMatch m = it.next();
            failingByTask[m.captured(2)].append(m.captured(1));
        }
    }

    QFile log;
    if (parser.isSet(logOption)) {
        log.setFileName(parser.value(logOption));
        if (!log.open(QIODevice::Append | QIODevice::Text)) {
            std::fprintf(stderr, "kwb-fixture-llm: cannot write %s\n", qPrintable(log.fileName()));
            return 2;
        }
    }

    QHash<QString, int> answered; // task -> answers given
    ScriptedLlmServer server;
    server.setModels({QStringLiteral("fixture-model")});
    server.setResponder([&](const QJsonObject& request) {
        ScriptedLlmServer::Reply reply;
        reply.delayMs = delayMs;
        QString prompt;
        for (const QJsonValue& m : request.value(QLatin1String("messages")).toArray())
            prompt += m.toObject().value(QLatin1String("content")).toString() + QLatin1Char('\n');
        reply.promptTokens = int(prompt.size() / 4);
        static const QRegularExpression answerFor(QStringLiteral("answer for task (L\\d+/\\d+)"));
        static const QRegularExpression anyTask(QStringLiteral("(L\\d+/\\d+)"));
        const QRegularExpressionMatch m = answerFor.match(prompt);
        const int choices = std::max(1, request.value(QLatin1String("n")).toInt(1));
        QStringList texts, what;
        if (!m.hasMatch()) {
            const QString task = anyTask.match(prompt).captured(1);
            texts << QStringLiteral("Notes on %1: the heavy operator is already a library call; keep it, and fuse the "
                                    "memory-bound epilogue into one elementwise kernel that reads the intermediate once.")
                         .arg(task.isEmpty() ? QStringLiteral("the task") : task);
            what << QStringLiteral("note");
        } else {
            const QString task = m.captured(1);
            const QString reference = readText(dir + QStringLiteral("/reference/") + fileStem(task) + QStringLiteral(".md"));
            const bool pilotWording = prompt.contains(QLatin1String("custom tiled CUDA kernels for every operator"));
            const int need = stableHash(task + QString::number(seed)) % (maxNeed + 1) + (pilotWording ? 2 : 0);
            const QJsonValue requestSeed = request.value(QLatin1String("seed"));
            for (int i = 0; i < choices; ++i) {
                const QString drawKey = task + QString::number(seed) + QLatin1Char('/') +
                                        (requestSeed.isDouble() ? QString::number(requestSeed.toInteger() + i)
                                                                : QStringLiteral("none/%1").arg(i)) +
                                        QLatin1Char('/') + prompt;
                const int k = stateless ? stableHash(drawKey) % (maxNeed + 3) : answered[task]++;
                if (reference.isEmpty()) {
                    texts << QStringLiteral("I cannot write this kernel.");
                    what << QStringLiteral("no-fixture");
                } else if (k >= need) {
                    texts << reference;
                    what << QStringLiteral("reference");
                } else if (const QStringList failing = failingByTask.value(task); !failing.isEmpty() && k % 2 == 0) {
                    const QString file = failing.at((k / 2) % failing.size());
                    texts << readText(dir + QLatin1Char('/') + file);
                    what << file;
                } else {
                    texts << breakReference(reference, k + stableHash(task));
                    what << QStringLiteral("broken-%1").arg((k + stableHash(task)) % 3);
                }
            }
            if (log.isOpen()) {
                QTextStream(&log) << task << " need=" << need << " answers=" << what.join(QLatin1Char(',')) << '\n';
                log.flush();
            }
        }
        reply.texts = texts;
        qsizetype chars = 0;
        for (const QString& t : std::as_const(texts))
            chars += t.size();
        reply.completionTokens = int(chars / 4);
        return reply;
    });
    if (!server.start()) {
        std::fprintf(stderr, "kwb-fixture-llm: cannot listen on 127.0.0.1\n");
        return 1;
    }
    std::printf("%s\n", qPrintable(server.baseUrl().toString()));
    std::fflush(stdout);
    return app.exec();
}
