// `kwb run` end to end: kwb (a child process) against the scripted OpenAI-compatible server
// (scriptedllmserver.h, in this process) and the fake worker (fakeworker.cpp, which knows L1/1 and
// L2/1 and takes an evaluation's status from a "status: NAME" marker in the answer). The rows land
// in the run store; Ctrl-C (SIGINT) cancels cleanly and --resume finishes without repeating work.

#include "../support/storefiles.h"
#include "core/config/regime.h"
#include "core/config/runconfig.h"
#include "core/run/runlaunch.h"
#include "core/run/runname.h"
#include "core/store/runstore.h"
#include "core/workers/workerlauncher.h"
#include "scriptedllmserver.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QSet>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <csignal>
#include <memory>
#include <optional>

using namespace kwb;

// The model seed of the built-in regimes (regimes/study.toml): the study ran one seed.
constexpr qint64 kRegimeModelSeed = 42;

using kwb::test::ScriptedLlmServer;

namespace {

QString answer(const QString& status)
{
    return QStringLiteral("status: %1\n\n```cuda\nextern \"C\" __global__ void k(float* y) { y[0] = 1.0f; }\n```\n\n"
                          "```python\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n    return x\n```\n")
        .arg(status);
}

ScriptedLlmServer::Reply reply(const QString& status, int delayMs = 0)
{
    ScriptedLlmServer::Reply r;
    r.texts = {answer(status)};
    r.delayMs = delayMs;
    return r;
}

struct Result
{
    int exitCode = -1;
    QString out;
    QString err;
};

} // namespace

class TestCliRun : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;
    std::unique_ptr<ScriptedLlmServer> m_server;
    int m_dbCount = 0;

    QString newDb() { return m_dir.filePath(QStringLiteral("runs%1.sqlite").arg(++m_dbCount)); }

    QStringList base() const
    {
        return {QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("--tasks-dir"),
                QStringLiteral(KWB_SOURCE_DIR "/tasks"), QStringLiteral("run")};
    }

    QStringList runArgs(const QString& db, const QString& tasks = QStringLiteral("L1:1,L2:1")) const
    {
        return base() + QStringList{QStringLiteral("--regime"),   QStringLiteral("zero-shot"),
                                    QStringLiteral("--tasks"),    tasks,
                                    QStringLiteral("--endpoint"), m_server->baseUrl().toString(),
                                    QStringLiteral("--model"),    QStringLiteral("m"),
                                    QStringLiteral("--db"),       db};
    }

    /// Runs kwb with the event loop spinning, so the scripted server in this process answers.
    static Result runKwb(const QStringList& arguments, int timeoutMs = 60000,
                         const QProcessEnvironment& environment = QProcessEnvironment::systemEnvironment())
    {
        QProcess kwb;
        kwb.setProcessEnvironment(environment);
        QSignalSpy finished(&kwb, &QProcess::finished);
        kwb.start(QStringLiteral(KWB_CLI), arguments);
        Result r;
        if (!kwb.waitForStarted(10000) || !finished.wait(timeoutMs)) {
            kwb.kill();
            kwb.waitForFinished(5000);
            return r;
        }
        r.exitCode = kwb.exitStatus() == QProcess::NormalExit ? kwb.exitCode() : -1;
        r.out = QString::fromUtf8(kwb.readAllStandardOutput());
        r.err = QString::fromUtf8(kwb.readAllStandardError());
        return r;
    }

private Q_SLOTS:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void init()
    {
        m_server = std::make_unique<ScriptedLlmServer>();
        QVERIFY(m_server->start());
        m_server->setDefaultReply(reply(QStringLiteral("correct")));
    }

    void cleanup() { m_server.reset(); }

    void sweepStoresOneFullRunPerN()
    {
        // `kwb sweep --regime agent --n 4,1,2`: a run of the whole agent (3 turns, no stop at a
        // correct candidate) per n, with the same seeds. The server answers correct only for the
        // seed of sample 1 of turn 1 (43 = kRegimeModelSeed + 1, the agent's seed), so by hand: n = 1
        // never gets it (0/1 correct), n = 2 and n = 4 do (1/1). Each turn has its own seeds
        // (modelSeedFor): sample 1's seed of each turn is asked by both, sample 3's only by n = 4.
        QList<qint64> seeds;
        m_server->setResponder([&seeds](const QJsonObject& request) {
            const qint64 seed = request.value(QLatin1String("seed")).toInteger(-1);
            seeds << seed;
            return reply(seed == kRegimeModelSeed + 1 ? QStringLiteral("correct") : QStringLiteral("incorrect"));
        });
        const QString db = newDb();
        QStringList args = runArgs(db, QStringLiteral("L1:1"));
        args[args.indexOf(QStringLiteral("run"))] = QStringLiteral("sweep");
        args[args.indexOf(QStringLiteral("zero-shot"))] = QStringLiteral("agent");
        args << QStringLiteral("--n") << QStringLiteral("4,1,2") << QStringLiteral("--timing-trials")
             << QStringLiteral("7") << QStringLiteral("--isolation") << QStringLiteral("reuse")
             << QStringLiteral("--json");
        const Result r = runKwb(args, 120000);
        QVERIFY2(r.exitCode == 0, qPrintable(QStringLiteral("exit %1\n%2%3").arg(r.exitCode).arg(r.out, r.err)));
        QVERIFY2(r.err.contains(QStringLiteral("whole regime per n")), qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("all: n=1 0.0 % [0–98] (compiled 100.0 %), n=2 100.0 % [3–100] "
                                               "(compiled 100.0 %), n=4 100.0 % [3–100]")),
                 qPrintable(r.err));

        RunStore store;
        QVERIFY(store.open(db));
        const QList<RunInfo> runs = store.runs();
        QCOMPARE(runs.size(), 3);
        QString sweepId;
        const QList<int> ns{1, 2, 4};
        for (int i = 0; i < 3; ++i) {
            const QJsonObject config = runs[i].configJson;
            QVERIFY2(runs[i].name.contains(QStringLiteral("sweep n=%1").arg(ns[i])), qPrintable(runs[i].name));
            const QJsonObject sweep = config.value(QLatin1String("sweep")).toObject();
            QCOMPARE(sweep.value(QLatin1String("ns")).toArray(), (QJsonArray{1, 2, 4}));
            QCOMPARE(sweep.value(QLatin1String("n")).toInt(), ns[i]);
            if (i == 0)
                sweepId = sweep.value(QLatin1String("id")).toString();
            QVERIFY(!sweepId.isEmpty());
            QCOMPARE(sweep.value(QLatin1String("id")).toString(), sweepId); // linked as one sweep
            QCOMPARE(config.value(QLatin1String("seeds")).toObject().value(QLatin1String("model")).toInteger(),
                     kRegimeModelSeed);
            QCOMPARE(config.value(QLatin1String("timing_trials")).toInt(), 7);
            const QJsonObject regime = config.value(QLatin1String("regime")).toObject();
            QCOMPARE(regime.value(QLatin1String("n")).toInt(), ns[i]);
            QCOMPARE(regime.value(QLatin1String("turns")).toInt(), 3);
            QCOMPARE(regime.value(QLatin1String("stop_when_correct")).toBool(true), false);
            // Every turn ran: 3 turns of n candidates.
            QCOMPARE(store.evaluations(runs[i].id).size(), 3 * ns[i]);
        }
        for (int turn = 1; turn <= 3; ++turn) {
            QCOMPARE(seeds.count(modelSeedFor(kRegimeModelSeed, turn, 1)), 2);
            QCOMPARE(seeds.count(modelSeedFor(kRegimeModelSeed, turn, 3)), 1);
        }
        QVERIFY(!seeds.contains(-1));
        const QJsonObject summary = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(summary.value(QLatin1String("sweep")).toString(), sweepId);
        QCOMPARE(summary.value(QLatin1String("runs")).toArray().size(), 3);

        // The report: the study's curve from the three runs, the first-turn estimate by its own name.
        const Result report = runKwb({QStringLiteral("report"), QStringLiteral("--db"), db});
        QCOMPARE(report.exitCode, 0);
        QVERIFY2(report.out.contains(QStringLiteral("## Best-of-n (the study's")), qPrintable(report.out));
        QVERIFY2(
            report.out.contains(QStringLiteral("| agent %1 | all | 2 | #2 | 1 | 1 | 100.0 % [").arg(sweepId.left(8))),
            qPrintable(report.out));
        QVERIFY2(report.out.contains(QStringLiteral("## First-turn pass@n (unbiased estimator)")),
                 qPrintable(report.out));

        // `--sweep ID` continues the sweep: n = 1, 2, 4 are finished and kept, n = 8 is added to it.
        seeds.clear();
        QStringList more = args;
        more[more.indexOf(QStringLiteral("4,1,2"))] = QStringLiteral("1,2,4,8");
        more << QStringLiteral("--sweep") << sweepId;
        const Result continued = runKwb(more, 120000);
        QVERIFY2(continued.exitCode == 0, qPrintable(continued.err));
        QVERIFY2(continued.err.contains(QStringLiteral("n = 4: run 3 is finished, kept")), qPrintable(continued.err));
        const QList<RunInfo> after = store.runs();
        QCOMPARE(after.size(), 4);
        const QJsonObject eight = after.last().configJson.value(QLatin1String("sweep")).toObject();
        QCOMPARE(eight.value(QLatin1String("id")).toString(), sweepId);
        QCOMPARE(eight.value(QLatin1String("n")).toInt(), 8);
        QCOMPARE(store.evaluations(after.last().id).size(), 24);
        for (int turn = 1; turn <= 3; ++turn) { // only the new run asked the model
            QCOMPARE(seeds.count(modelSeedFor(kRegimeModelSeed, turn, 7)), 1);
            QCOMPARE(seeds.count(modelSeedFor(kRegimeModelSeed, turn, 1)), 1);
        }
        QVERIFY2(continued.err.contains(QStringLiteral("n=8 100.0 %")), qPrintable(continued.err));
        QStringList wrong = more;
        wrong[wrong.indexOf(QStringLiteral("L1:1"))] = QStringLiteral("L2:1");
        const Result mismatch = runKwb(wrong);
        QCOMPARE(mismatch.exitCode, 2);
        QVERIFY2(mismatch.err.contains(QStringLiteral("give the same --regime and --tasks")), qPrintable(mismatch.err));

        const Result bad = runKwb(base().mid(0, 3) + QStringList{QStringLiteral("sweep"), QStringLiteral("--regime"),
                                                                 QStringLiteral("agent"), QStringLiteral("--tasks"),
                                                                 QStringLiteral("L1:1"), QStringLiteral("--db"), db,
                                                                 QStringLiteral("--n"), QStringLiteral("1,0")});
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains(QStringLiteral("--n: \"0\"")), qPrintable(bad.err));
    }

    void stopWhenCorrectIsStoredAndHonouredOnResume()
    {
        // `kwb run --regime agent --n 1 --stop-when-correct`: the generator's first request is
        // refused (HTTP 400), so the run stops incomplete after the analyzer and researcher. On
        // resume every answer is correct: with the stored setting the task ends at turn 1 (one
        // request); the agent's default would go on to turns 2 and 3 (4 requests more).
        ScriptedLlmServer::Reply refused;
        refused.action = ScriptedLlmServer::Action::HttpError;
        refused.status = 400;
        int requests = 0;
        m_server->setResponder([&requests, refused](const QJsonObject&) {
            return ++requests == 3 ? refused : reply(QStringLiteral("correct"));
        });
        const QString db = newDb();
        QStringList args = runArgs(db, QStringLiteral("L1:1"));
        args[args.indexOf(QStringLiteral("zero-shot"))] = QStringLiteral("agent");
        args << QStringLiteral("--n") << QStringLiteral("1") << QStringLiteral("--stop-when-correct");
        const Result r = runKwb(args);
        QVERIFY2(r.exitCode == 5, qPrintable(QStringLiteral("exit %1\n%2%3").arg(r.exitCode).arg(r.out, r.err)));
        RunStore store;
        QVERIFY(store.open(db));
        const RunInfo run = store.runs().first();
        QCOMPARE(
            run.configJson.value(QLatin1String("regime")).toObject().value(QLatin1String("stop_when_correct")).toBool(),
            true);
        QCOMPARE(requests, 3);
        const Result resumed =
            runKwb(base() << QStringLiteral("--db") << db << QStringLiteral("--resume") << QString::number(run.id));
        QVERIFY2(resumed.exitCode == 0,
                 qPrintable(QStringLiteral("exit %1\n%2").arg(resumed.exitCode).arg(resumed.err)));
        QCOMPARE(requests, 4);
        QCOMPARE(store.evaluations(run.id).size(), 1);

        // Without the option the agent goes on after a correct candidate: three turns.
        requests = 0;
        m_server->setResponder([&requests](const QJsonObject&) {
            ++requests;
            return reply(QStringLiteral("correct"));
        });
        const QString db2 = newDb();
        QStringList plain = runArgs(db2, QStringLiteral("L1:1"));
        plain[plain.indexOf(QStringLiteral("zero-shot"))] = QStringLiteral("agent");
        plain << QStringLiteral("--n") << QStringLiteral("1");
        const Result full = runKwb(plain);
        QVERIFY2(full.exitCode == 0, qPrintable(full.err));
        QCOMPARE(requests, 7); // analyzer, researcher, generator, then triager + generator twice
    }

    void feedbackIsStoredNamedAndResumed()
    {
        // `kwb run --regime iterative --feedback best`: stored with the regime, in the run's name
        // (which `kwb report` lists), and a resume keeps it whatever the command line says.
        m_server->setDefaultReply(reply(QStringLiteral("compile_error")));
        const QString db = newDb();
        QStringList args = runArgs(db, QStringLiteral("L1:1"));
        args[args.indexOf(QStringLiteral("zero-shot"))] = QStringLiteral("iterative");
        const Result r = runKwb(QStringList(args) << QStringLiteral("--feedback") << QStringLiteral("best"));
        QVERIFY2(r.exitCode == 0, qPrintable(QStringLiteral("exit %1\n%2%3").arg(r.exitCode).arg(r.out, r.err)));
        RunStore store;
        QVERIFY(store.open(db));
        const RunInfo run = store.runs().first();
        QCOMPARE(
            run.configJson.value(QLatin1String("regime")).toObject().value(QLatin1String("feedback_source")).toString(),
            QStringLiteral("best"));
        QCOMPARE(
            run.configJson.value(QLatin1String("seeds")).toObject().value(QLatin1String("turn_stride")).toInteger(),
            kModelSeedTurnStride);
        QVERIFY2(run.name.contains(QStringLiteral("feedback=best")), qPrintable(run.name));
        const Result report = runKwb({QStringLiteral("report"), QStringLiteral("--db"), db});
        QCOMPARE(report.exitCode, 0);
        QVERIFY2(report.out.contains(QStringLiteral("feedback=best")), qPrintable(report.out));
        const Result resumed =
            runKwb(base() << QStringLiteral("--db") << db << QStringLiteral("--resume") << QString::number(run.id)
                          << QStringLiteral("--feedback") << QStringLiteral("last"));
        QVERIFY2(resumed.err.contains(QStringLiteral("stored feedback setting (best)")), qPrintable(resumed.err));

        // The default is the last attempt.
        const QString db2 = newDb();
        QVERIFY(runKwb(runArgs(db2, QStringLiteral("L1:1"))).exitCode == 0);
        RunStore store2;
        QVERIFY(store2.open(db2));
        QCOMPARE(store2.runs()
                     .first()
                     .configJson.value(QLatin1String("regime"))
                     .toObject()
                     .value(QLatin1String("feedback_source"))
                     .toString(),
                 QStringLiteral("last"));
        const Result bad = runKwb(QStringList(args) << QStringLiteral("--feedback") << QStringLiteral("worst"));
        QVERIFY(bad.exitCode != 0);
        QVERIFY2(bad.err.contains(QStringLiteral("--feedback")), qPrintable(bad.err));
    }

    void workerLimitsAreStoredAndResumed()
    {
        // A candidate whose host code takes more memory than --max-host-memory: resource_limit, and
        // the run goes on (the queue's workers got the limit); the limit is stored with the run and
        // a resume plans with it.
        m_server->setDefaultReply([] {
            ScriptedLlmServer::Reply r = reply(QStringLiteral("correct"));
            r.texts = {QStringLiteral("fake: alloc mib: 2048 then: hang\n") + answer(QStringLiteral("correct"))};
            return r;
        }());
        const QString db = newDb();
        const Result r =
            runKwb(runArgs(db, QStringLiteral("L1:1")) << QStringLiteral("--max-host-memory") << QStringLiteral("200M")
                                                       << QStringLiteral("--timeout") << QStringLiteral("120"));
        QVERIFY2(r.exitCode == 0, qPrintable(QStringLiteral("exit %1\n%2%3").arg(r.exitCode).arg(r.out, r.err)));
        RunStore store;
        QVERIFY(store.open(db));
        const QList<EvaluationRecord> evaluations = store.evaluations(1);
        QCOMPARE(evaluations.size(), 1);
        QCOMPARE(evaluations.first().status, QStringLiteral("resource_limit"));
        const std::optional<RunInfo> run = store.run(1);
        QVERIFY(run);
        const QJsonObject limits = run->configJson.value(QLatin1String("worker_limits")).toObject();
        QCOMPARE(limits.value(QLatin1String("host_memory_bytes")).toDouble(), 200.0 * 1024 * 1024);
        QCOMPARE(limits.value(QLatin1String("host_memory_default")).toBool(true), false);
        QCOMPARE(limits.value(QLatin1String("os_sandbox")).toBool(false), true);
        QCOMPARE(run->configJson.value(QLatin1String("sandbox")).toString(), workerSandboxStatus(WorkerLimits()));
        QString error;
        const std::optional<RunPlan> resumed = planResume(*run, &error);
        QVERIFY2(resumed, qPrintable(error));
        QCOMPARE(resumed->workerLimits.hostMemoryBytes, qint64(200) << 20);
        QVERIFY(resumed->workerLimits.osSandbox);

        // Without the option: the default, stored as such; --no-os-sandbox is stored and warned about.
        m_server->setDefaultReply(reply(QStringLiteral("correct")));
        const QString db2 = newDb();
        const Result plain = runKwb(runArgs(db2, QStringLiteral("L1:1")) << QStringLiteral("--no-os-sandbox"));
        QVERIFY2(plain.exitCode == 0, qPrintable(QStringLiteral("exit %1\n%2").arg(plain.exitCode).arg(plain.err)));
        QVERIFY2(plain.err.contains(QStringLiteral("warning: the worker runs without the OS sandbox")),
                 qPrintable(plain.err));
        RunStore store2;
        QVERIFY(store2.open(db2));
        const std::optional<RunInfo> run2 = store2.run(1);
        QVERIFY(run2);
        const QJsonObject limits2 = run2->configJson.value(QLatin1String("worker_limits")).toObject();
        QCOMPARE(limits2.value(QLatin1String("host_memory_default")).toBool(false), true);
        QCOMPARE(limits2.value(QLatin1String("host_memory_bytes")).toDouble(), double(defaultHostMemoryLimit()));
        QCOMPARE(run2->configJson.value(QLatin1String("sandbox")).toString(),
                 QStringLiteral("none: turned off (--no-os-sandbox)"));
        const std::optional<RunPlan> resumed2 = planResume(*run2, &error);
        QVERIFY(resumed2);
        QCOMPARE(resumed2->workerLimits.hostMemoryBytes, qint64(0)); // the machine's default, wherever it resumes
        QVERIFY(!resumed2->workerLimits.osSandbox);
    }

    // Issue 14: --compile-workers sizes the run's compile pool and is stored with the run; without
    // it, the default for the run's answer format (1 for native answers); it is not negative.
    void compileWorkersAreUsedAndStored()
    {
        const QString db = newDb();
        const Result r = runKwb(runArgs(db) << QStringLiteral("--compile-workers") << QStringLiteral("2"));
        QVERIFY2(r.exitCode == 0, qPrintable(QStringLiteral("exit %1\n%2%3").arg(r.exitCode).arg(r.out, r.err)));
        QVERIFY2(r.err.contains(QStringLiteral("2 compile worker(s)")), qPrintable(r.err));
        RunStore store;
        QVERIFY(store.open(db));
        QCOMPARE(store.run(1)->configJson.value(QLatin1String("compile_workers")).toInt(), 2);

        const Result plain = runKwb(runArgs(newDb()));
        QVERIFY2(plain.exitCode == 0, qPrintable(plain.err));
        QVERIFY2(plain.err.contains(QStringLiteral("1 compile worker(s), 2 task(s) in flight")), qPrintable(plain.err));

        const Result bad = runKwb(runArgs(newDb()) << QStringLiteral("--compile-workers") << QStringLiteral("-1"));
        QCOMPARE(bad.exitCode, 2);
        QVERIFY2(bad.err.contains(QStringLiteral("--compile-workers")), qPrintable(bad.err));
    }

    // --evaluations-per-gpu: the queue's slots per local GPU, said and stored with the run where not
    // one (a run's pace depends on it); a task in flight per slot; out of [1, 4] refused.
    void evaluationsPerGpuAreUsedAndStored()
    {
        const QString db = newDb();
        const Result r = runKwb(runArgs(db) << QStringLiteral("--evaluations-per-gpu") << QStringLiteral("2"));
        QVERIFY2(r.exitCode == 0, qPrintable(QStringLiteral("exit %1\n%2%3").arg(r.exitCode).arg(r.out, r.err)));
        QVERIFY2(
            r.err.contains(QStringLiteral("1 compile worker(s), 3 task(s) in flight, 2 evaluations at once per GPU")),
            qPrintable(r.err));
        RunStore store;
        QVERIFY(store.open(db));
        QCOMPARE(store.run(1)->configJson.value(QLatin1String("evaluations_per_gpu")).toInt(), 2);

        const QString plainDb = newDb();
        const Result plain = runKwb(runArgs(plainDb));
        QVERIFY2(plain.exitCode == 0, qPrintable(plain.err));
        QVERIFY2(!plain.err.contains(QStringLiteral("evaluations at once")), qPrintable(plain.err));
        RunStore plainStore;
        QVERIFY(plainStore.open(plainDb));
        QVERIFY(!plainStore.run(1)->configJson.contains(QLatin1String("evaluations_per_gpu")));

        for (const QString& bad : {QStringLiteral("0"), QStringLiteral("5")}) {
            const Result refused = runKwb(runArgs(newDb()) << QStringLiteral("--evaluations-per-gpu") << bad);
            QCOMPARE(refused.exitCode, 2);
            QVERIFY2(refused.err.contains(QStringLiteral("--evaluations-per-gpu")), qPrintable(refused.err));
        }
    }

    // A regime of the user's own (a TOML file in $XDG_CONFIG_HOME/kernel-workbench/regimes, no
    // compiling): `kwb run --regime NAME` runs it with its settings and stores them with the run;
    // a broken file is named, with its line, where its regime is asked for.
    void usersRegimeRuns()
    {
        m_server->setDefaultReply(reply(QStringLiteral("compile_error")));
        const QString config = m_dir.filePath(QStringLiteral("user-config"));
        const QString dir = config + QStringLiteral("/kernel-workbench/regimes");
        QVERIFY(QDir().mkpath(dir));
        const QByteArray toml = "[[regime]]\nname = \"retry-twice\"\ndescription = \"The iterative prompts, "
                                "two answers a turn\"\nroles = { generator = \"iterative/generator.mustache\", "
                                "retry = \"iterative/retry.mustache\" }\nn = 2\nturns = 2\ntemperature = 0.3\n"
                                "seed = 7\nfeedback = \"raw_log\"\nselection = \"monotone\"\n";
        QFile file(dir + QStringLiteral("/retry-twice.toml"));
        QVERIFY(file.open(QIODevice::WriteOnly) && file.write(toml) == toml.size());
        file.close();
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(QStringLiteral("XDG_CONFIG_HOME"), config);

        const QString db = newDb();
        QStringList args = runArgs(db, QStringLiteral("L1:1"));
        args[args.indexOf(QStringLiteral("zero-shot"))] = QStringLiteral("retry-twice");
        const Result r = runKwb(args, 60000, env);
        QVERIFY2(r.exitCode == 0, qPrintable(QStringLiteral("exit %1\n%2%3").arg(r.exitCode).arg(r.out, r.err)));
        RunStore store;
        QVERIFY(store.open(db));
        const RunInfo run = store.runs().first();
        QCOMPARE(run.regime, QStringLiteral("retry-twice"));
        QCOMPARE(runLabel(run), QStringLiteral("#1 retry-twice n=2 2 turns")); // named by its shape
        QCOMPARE(store.evaluations(run.id).size(), 4); // 2 answers in each of 2 turns, none correct
        // The file's temperature and seed are what the model is asked with: sample k (from 0) of
        // turn t with modelSeedFor(7, t, k).
        QSet<qint64> seeds;
        for (const QJsonObject& request : m_server->requests()) {
            QCOMPARE(request.value(QLatin1String("temperature")).toDouble(), 0.3);
            seeds << request.value(QLatin1String("seed")).toInteger();
        }
        QCOMPARE(seeds, (QSet<qint64>{modelSeedFor(7, 1, 0), modelSeedFor(7, 1, 1), modelSeedFor(7, 2, 0),
                                      modelSeedFor(7, 2, 1)}));

        // Broken, the file says why where its regime is asked for.
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QByteArray(toml).replace("n = 2", "n = 0"));
        file.close();
        const Result broken = runKwb(args, 60000, env);
        QCOMPARE(broken.exitCode, 2);
        QVERIFY2(broken.err.contains(dir + QStringLiteral("/retry-twice.toml:5: regime[0] (retry-twice).n: must be "
                                                          "an integer from 1 to 64, not 0")),
                 qPrintable(broken.err));
    }

    void zeroShotRunFillsTheStore()
    {
        m_server->enqueue(reply(QStringLiteral("compile_error")));
        const QString db = newDb();
        const Result r = runKwb(runArgs(db) << QStringLiteral("--json"));
        QVERIFY2(r.exitCode == 0, qPrintable(QStringLiteral("exit %1\n%2%3").arg(r.exitCode).arg(r.out, r.err)));
        QCOMPARE(m_server->requests().size(), 2);
        QCOMPARE(m_server->requests().first().value(QLatin1String("model")).toString(), QStringLiteral("m"));

        const QJsonObject summary = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(summary.value(QLatin1String("tasks")).toInt(), 2);
        QCOMPARE(summary.value(QLatin1String("correct")).toInt(), 1);
        QCOMPARE(summary.value(QLatin1String("compiled")).toInt(), 1);
        QCOMPARE(summary.value(QLatin1String("candidates_evaluated")).toInt(), 2);
        QVERIFY(summary.value(QLatin1String("report")).toString().contains(QStringLiteral("kwb report --db")));
        QVERIFY2(r.err.contains(QStringLiteral("2/2 tasks")), qPrintable(r.err)); // the progress line

        RunStore store;
        QVERIFY(store.open(db));
        const QList<RunInfo> runs = store.runs();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs.first().status, RunStatus::Finished);
        QCOMPARE(runs.first().regime, QStringLiteral("zero-shot"));
        const auto evals = store.evaluations(runs.first().id);
        QCOMPARE(evals.size(), 2);
        QStringList statuses;
        for (const EvaluationRecord& e : evals)
            statuses << e.task + QLatin1Char('=') + e.status;
        statuses.sort();
        QCOMPARE(statuses, (QStringList{QStringLiteral("L1/1=compile_error"), QStringLiteral("L2/1=correct")}));
        // The whole configuration.
        const RunConfig& config = runs.first().config;
        QCOMPARE(config.model, QStringLiteral("m"));
        QCOMPARE(config.endpoint, m_server->baseUrl().toString());
        QVERIFY(config.templates.contains(QStringLiteral("zero-shot/generator")));
        QVERIFY(config.templates.contains(QStringLiteral("partials/contract")));
        QVERIFY(runs.first()
                    .configJson.value(QLatin1String("templates"))
                    .toObject()
                    .value(QLatin1String("zero-shot/generator"))
                    .toObject()
                    .value(QLatin1String("sha256"))
                    .toString()
                    .size() == 64);
        QCOMPARE(config.protocolProfile, QStringLiteral("kernelbench-fp32")); // the default (defaults.h)
        QCOMPARE(config.gpu.name, QStringLiteral("NVIDIA H200"));
        QCOMPARE(config.versions.worker, QStringLiteral("0.1.0"));
        QCOMPARE(config.tasks.size(), 2);
        QVERIFY(config.regime.usable().has_value());
        QVERIFY(Regime::fromJson(runs.first().configJson.value(QLatin1String("regime")).toObject()).has_value());
    }

    // A server that accepts and never answers: --model-timeout ends the request (retries
    // included) after 2 s instead of 5 minutes per attempt, and the run reports it for the task.
    void modelTimeoutEndsASilentServer()
    {
        ScriptedLlmServer::Reply silent;
        silent.action = ScriptedLlmServer::Action::Silent;
        m_server->setDefaultReply(silent);
        const QString db = newDb();
        const Result r = runKwb(runArgs(db, QStringLiteral("L1:1")) << QStringLiteral("--model-timeout")
                                                                    << QStringLiteral("2") << QStringLiteral("--json"),
                                60000); // generous: the point is that it ends
        QVERIFY2(r.exitCode >= 0, qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("model time-out of 2 s")), qPrintable(r.err));
        const QJsonObject summary = QJsonDocument::fromJson(r.out.toUtf8()).object();
        const QJsonArray taskErrors = summary.value(QLatin1String("task_errors")).toArray();
        QCOMPARE(taskErrors.size(), 1);
        QVERIFY2(taskErrors.first().toString().contains(QStringLiteral("L1/1: model request failed (timeout")),
                 qPrintable(taskErrors.first().toString()));

        RunStore store;
        QVERIFY(store.open(db));
        const QList<RunInfo> runs = store.runs();
        QCOMPARE(runs.size(), 1);
        const RunConfig& config = runs.first().config;
        QCOMPARE(config.modelTimeoutS, std::optional<double>(2.0)); // kept for a resume
        const QList<UnitResponse> responses = store.responses(runs.first().id);
        QCOMPARE(responses.size(), 1);
        QVERIFY2(responses.first().response.error.startsWith(QStringLiteral("timeout: ")),
                 qPrintable(responses.first().response.error));
        QCOMPARE(store.evaluations(runs.first().id).size(), 0);
    }

    // A prompt over the context budget stops `kwb run` before any model request, naming the task,
    // turn, role and tokens (the scripted server has no /tokenize: estimated, and said so).
    void overBudgetCostsNoRequest()
    {
        const QString db = newDb();
        // 4096 max output + 64 chat template leave 40 tokens of 4200 for the prompt.
        const Result r =
            runKwb(runArgs(db, QStringLiteral("L1:1")) << QStringLiteral("--context-tokens") << QStringLiteral("4200"));
        QVERIFY2(r.exitCode == 2, qPrintable(QStringLiteral("exit %1\n%2").arg(r.exitCode).arg(r.err)));
        QVERIFY2(r.err.contains(QStringLiteral("over the context budget: task L1/1, turn 1, role generator "
                                               "(zero-shot/generator.mustache): prompt ")),
                 qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("tokens (estimated) + 64 chat template + 4096 max output tokens > 4200 "
                                               "context tokens")),
                 qPrintable(r.err));
        QCOMPARE(m_server->requests().size(), 0);
        // The same run with the default budget fits.
        const Result ok = runKwb(runArgs(newDb(), QStringLiteral("L1:1")));
        QVERIFY2(!m_server->requests().isEmpty(), qPrintable(ok.err));
        QCOMPARE(m_server->requests().first().value(QLatin1String("max_tokens")).toInt(), 4096);
    }

    // `kwb prompt` prints what a run sends: the study set by default, the workbench set by name;
    // placeholders and the count's kind on stderr; a turn the regime does not have is exit 2.
    void promptPrintsWhatARunSends()
    {
        QStringList global = base();
        global.removeLast(); // "run"
        const QStringList args =
            global + QStringList{QStringLiteral("prompt"), QStringLiteral("--regime"), QStringLiteral("agent"),
                                 QStringLiteral("--task"), QStringLiteral("L2/1"),     QStringLiteral("--turn"),
                                 QStringLiteral("2")};
        const Result study = runKwb(args);
        QVERIFY2(study.exitCode == 0, qPrintable(study.err));
        QVERIFY(study.out.startsWith(QStringLiteral("You are the kernel writer")));
        QVERIFY(study.out.contains(QStringLiteral("How to work: correct first, fast second.")));
        QVERIFY(study.out.contains(QStringLiteral("(placeholder: an earlier model answer goes here)")));
        QVERIFY(!study.out.contains(QStringLiteral("Example of a complete answer")));
        QVERIFY2(study.err.contains(QStringLiteral("placeholders stand for 4 earlier model text(s)")),
                 qPrintable(study.err));
        QVERIFY2(study.err.contains(QStringLiteral("estimated: characters / 3.2")), qPrintable(study.err));
        QVERIFY2(study.err.contains(QStringLiteral("fits")), qPrintable(study.err));
        const Result workbench =
            runKwb(QStringList(args) << QStringLiteral("--prompts") << QStringLiteral("workbench-v1"));
        QVERIFY2(workbench.exitCode == 0, qPrintable(workbench.err));
        QVERIFY(workbench.out.contains(QStringLiteral("Example of a complete answer")));
        QVERIFY(workbench.out != study.out);
        const Result none =
            runKwb(global + QStringList{QStringLiteral("prompt"), QStringLiteral("--regime"),
                                        QStringLiteral("zero-shot"), QStringLiteral("--task"), QStringLiteral("L1/1"),
                                        QStringLiteral("--turn"), QStringLiteral("2")});
        QCOMPARE(none.exitCode, 2);
        QVERIFY2(none.err.contains(QStringLiteral("it sends: turn 1 generator")), qPrintable(none.err));
    }

    // A template that does not render for a task (any turn, any role of the regime), or a set
    // whose partials include each other, stops `kwb run` before the first model request and
    // before a run row is made.
    void templateErrorsCostNoRequest_data()
    {
        QTest::addColumn<QString>("regime");
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("append");
        QTest::addColumn<QString>("words");
        QTest::newRow("agent generator, after the analyzer and researcher")
            << QStringLiteral("agent") << QStringLiteral("agent/generator.mustache") << QStringLiteral("{{nope}}\n")
            << QStringLiteral("unknown variable 'nope'");
        QTest::newRow("iterative retry, turn 2 only")
            << QStringLiteral("iterative") << QStringLiteral("iterative/retry.mustache")
            << QStringLiteral("{{#feedback}}{{nope}}{{/feedback}}\n") << QStringLiteral("unknown variable 'nope'");
        QTest::newRow("partial cycle") << QStringLiteral("zero-shot") << QStringLiteral("partials/reference.mustache")
                                       << QStringLiteral("{{> reference}}\n")
                                       << QStringLiteral("partial cycle: reference > reference");
    }

    void templateErrorsCostNoRequest()
    {
        QFETCH(QString, regime);
        QFETCH(QString, file);
        QFETCH(QString, append);
        QFETCH(QString, words);
        QTemporaryDir prompts;
        QVERIFY(prompts.isValid());
        const QDir source(QStringLiteral(KWB_SOURCE_DIR "/prompts"));
        QDirIterator it(source.path(), QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QString from = it.next();
            const QString to = QDir(prompts.path()).filePath(source.relativeFilePath(from));
            QVERIFY(QDir().mkpath(QFileInfo(to).absolutePath()));
            QVERIFY(QFile::copy(from, to));
        }
        QFile target(QDir(prompts.path()).filePath(file));
        QVERIFY(target.open(QIODevice::Append));
        target.write(append.toUtf8());
        target.close();
        const QString db = newDb();
        QStringList args = runArgs(db, QStringLiteral("L1:1"));
        args[args.indexOf(QStringLiteral("zero-shot"))] = regime;
        args << QStringLiteral("--prompts") << prompts.path();
        const Result r = runKwb(args);
        QVERIFY2(r.exitCode == 2, qPrintable(QStringLiteral("exit %1\n%2").arg(r.exitCode).arg(r.err)));
        QVERIFY2(r.err.contains(QStringLiteral("template: L1/1: ")), qPrintable(r.err));
        QVERIFY2(r.err.contains(words), qPrintable(r.err));
        QCOMPARE(m_server->requests().size(), 0);
        RunStore store;
        QVERIFY(store.open(db));
        QCOMPARE(store.runs().size(), 0);
    }

    void badArguments_data()
    {
        QTest::addColumn<QString>("tasks");
        QTest::addColumn<QString>("regime");
        QTest::addColumn<int>("exitCode");
        QTest::addColumn<QString>("expected");
        QTest::newRow("malformed spec") << QStringLiteral("L1:a-3") << QStringLiteral("zero-shot") << 2
                                        << QStringLiteral("--tasks");
        QTest::newRow("backwards range") << QStringLiteral("L1:3-1") << QStringLiteral("zero-shot") << 2
                                         << QStringLiteral("--tasks");
        QTest::newRow("empty item") << QStringLiteral("L1:1,,L2:1") << QStringLiteral("zero-shot") << 2
                                    << QStringLiteral("--tasks");
        QTest::newRow("unknown task") << QStringLiteral("L1:1-2") << QStringLiteral("zero-shot") << 4
                                      << QStringLiteral("unknown task: L1/2");
        QTest::newRow("unknown regime") << QStringLiteral("L1:1") << QStringLiteral("fastest") << 2
                                        << QStringLiteral("unknown regime");
    }

    void badArguments()
    {
        QFETCH(QString, tasks);
        QFETCH(QString, regime);
        QFETCH(int, exitCode);
        QFETCH(QString, expected);
        QStringList args = runArgs(newDb(), tasks);
        args[args.indexOf(QStringLiteral("zero-shot"))] = regime;
        const Result r = runKwb(args);
        QVERIFY2(r.exitCode == exitCode, qPrintable(QStringLiteral("exit %1\n%2").arg(r.exitCode).arg(r.err)));
        QVERIFY2(r.err.contains(expected), qPrintable(r.err));
        QCOMPARE(m_server->requests().size(), 0);
    }

    void failedModelRequestMakesTheRunIncomplete()
    {
        // One task's request fails (HTTP 400, not retried): the run is incomplete, exit code 5, and
        // the task stays in the report's denominator with its reason; a resume completes it.
        ScriptedLlmServer::Reply refused;
        refused.action = ScriptedLlmServer::Action::HttpError;
        refused.status = 400;
        m_server->setResponder([refused](const QJsonObject& request) {
            const QString prompt = request.value(QLatin1String("messages"))
                                       .toArray()
                                       .last()
                                       .toObject()
                                       .value(QLatin1String("content"))
                                       .toString();
            return prompt.contains(QLatin1String("Task L2/1")) ? refused : reply(QStringLiteral("correct"));
        });
        const QString db = newDb();
        const Result r = runKwb(runArgs(db) << QStringLiteral("--json"));
        QVERIFY2(r.exitCode == 5, qPrintable(QStringLiteral("exit %1\n%2%3").arg(r.exitCode).arg(r.out, r.err)));
        QVERIFY2(r.err.contains(QStringLiteral("is incomplete")), qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("L2/1: model request failed: http")), qPrintable(r.err));
        const QJsonObject summary = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(summary.value(QLatin1String("complete")).toBool(true), false);
        QCOMPARE(summary.value(QLatin1String("unevaluated")).toArray().size(), 1);

        const Result report = runKwb(
            {QStringLiteral("report"), QStringLiteral("--db"), db, QStringLiteral("--format"), QStringLiteral("json")});
        QCOMPARE(report.exitCode, 0);
        const QJsonObject run = QJsonDocument::fromJson(report.out.toUtf8())
                                    .object()
                                    .value(QLatin1String("runs"))
                                    .toArray()
                                    .first()
                                    .toObject();
        QCOMPARE(run.value(QLatin1String("overall")).toObject().value(QLatin1String("tasks")).toInt(), 2);
        QCOMPARE(run.value(QLatin1String("overall")).toObject().value(QLatin1String("compiled")).toInt(), 1);
        const QJsonObject missing = run.value(QLatin1String("unevaluated")).toArray().first().toObject();
        QCOMPARE(missing.value(QLatin1String("task")).toString(), QStringLiteral("L2/1"));
        QCOMPARE(missing.value(QLatin1String("kind")).toString(), QStringLiteral("model_request_failed"));

        m_server->setResponder([](const QJsonObject&) { return reply(QStringLiteral("correct")); });
        const Result resumed =
            runKwb(base() << QStringLiteral("--db") << db << QStringLiteral("--resume") << QStringLiteral("1"));
        QVERIFY2(resumed.exitCode == 0,
                 qPrintable(QStringLiteral("exit %1\n%2").arg(resumed.exitCode).arg(resumed.err)));
        QVERIFY2(!resumed.err.contains(QStringLiteral("incomplete")), qPrintable(resumed.err));
    }

    void resumeEvaluatesAMachineFailureAgain()
    {
        // The worker is killed from outside (SIGKILL) while it evaluates: worker_lost, the machine's
        // failure, not the candidate's. The run is incomplete; the resume evaluates the stored answer
        // again, without asking the model.
        m_server->setDefaultReply([] {
            ScriptedLlmServer::Reply r = reply(QStringLiteral("correct"));
            r.texts = {QStringLiteral("fake: sigkill_once\n") + answer(QStringLiteral("correct"))};
            return r;
        }());
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("FAKEWORKER_ONCE"), m_dir.filePath(QStringLiteral("killed-once")));
        environment.insert(QStringLiteral("KWB_WORKER_ENV"), QStringLiteral("FAKEWORKER_ONCE"));
        environment.insert(QStringLiteral("KWB_OS_SANDBOX"), QStringLiteral("0")); // the marker file is outside scratch
        const QString db = newDb();
        const Result r = runKwb(runArgs(db, QStringLiteral("L1:1")), 60000, environment);
        QVERIFY2(r.exitCode == 5, qPrintable(QStringLiteral("exit %1\n%2").arg(r.exitCode).arg(r.err)));
        QVERIFY2(r.err.contains(QStringLiteral("machine failure (worker_lost")), qPrintable(r.err));
        {
            RunStore store;
            QVERIFY(store.open(db));
            const QList<EvaluationRecord> evaluations = store.evaluations(1);
            QCOMPARE(evaluations.size(), 1);
            QCOMPARE(evaluations.first().status, QStringLiteral("worker_lost"));
            QVERIFY(store.completedUnits(1).isEmpty());
        }
        const int asked = int(m_server->requests().size());
        const Result resumed =
            runKwb(base() << QStringLiteral("--db") << db << QStringLiteral("--resume") << QStringLiteral("1"), 60000,
                   environment);
        QVERIFY2(resumed.exitCode == 0,
                 qPrintable(QStringLiteral("exit %1\n%2").arg(resumed.exitCode).arg(resumed.err)));
        QCOMPARE(int(m_server->requests().size()), asked);
        RunStore store;
        QVERIFY(store.open(db));
        const QList<EvaluationRecord> evaluations = store.evaluations(1);
        QCOMPARE(evaluations.size(), 2);
        QCOMPARE(evaluations.last().status, QStringLiteral("correct"));
    }

    static QProcessEnvironment noGpuEnvironment()
    {
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("FAKEWORKER_NO_DEVICE"), QStringLiteral("1"));
        environment.insert(QStringLiteral("KWB_WORKER_ENV"), QStringLiteral("FAKEWORKER_NO_DEVICE"));
        return environment;
    }

    // Issue 11, item 6: without a GPU (the worker's hello: cuda_device_count 0) `kwb run` and
    // `kwb sweep` refuse before any model request and before a run row, with exit code 6.
    void noGpuRefusesTheRun_data()
    {
        QTest::addColumn<QString>("command");
        QTest::newRow("run") << QStringLiteral("run");
        QTest::newRow("sweep") << QStringLiteral("sweep");
    }

    void noGpuRefusesTheRun()
    {
        QFETCH(QString, command);
        const QString db = newDb();
        QStringList args = runArgs(db, QStringLiteral("L1:1"));
        args[args.indexOf(QStringLiteral("run"))] = command;
        if (command == QLatin1String("sweep"))
            args << QStringLiteral("--n") << QStringLiteral("1,2");
        const Result r = runKwb(args << QStringLiteral("--json"), 60000, noGpuEnvironment());
        QVERIFY2(r.exitCode == 6, qPrintable(QStringLiteral("exit %1\n%2%3").arg(r.exitCode).arg(r.out, r.err)));
        QVERIFY2(r.err.contains(QStringLiteral("no GPU can evaluate: the worker sees no CUDA device")),
                 qPrintable(r.err));
        QVERIFY2(r.err.contains(QStringLiteral("--compile-only")), qPrintable(r.err));
        QCOMPARE(QJsonDocument::fromJson(r.out.toUtf8())
                     .object()
                     .value(QLatin1String("error"))
                     .toObject()
                     .value(QLatin1String("code"))
                     .toString(),
                 QStringLiteral("no_evaluator"));
        QCOMPARE(m_server->requests().size(), 0);
        RunStore store;
        QVERIFY(store.open(db));
        QCOMPARE(store.runs().size(), 0);
    }

    // --compile-only runs without a GPU: evaluate carries "device": "none", the run stores
    // compile_only, the summary and the report say correctness was not measured (never 0 %).
    void compileOnlyRunsWithoutAGpu()
    {
        const QString db = newDb();
        const Result r = runKwb(runArgs(db) << QStringLiteral("--compile-only") << QStringLiteral("--json"), 60000,
                                noGpuEnvironment());
        QVERIFY2(r.exitCode == 0, qPrintable(QStringLiteral("exit %1\n%2%3").arg(r.exitCode).arg(r.out, r.err)));
        QVERIFY2(r.err.contains(QStringLiteral("compile-only: correctness not measured")), qPrintable(r.err));
        const QJsonObject summary = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QVERIFY(summary.value(QLatin1String("correct")).isNull());
        QCOMPARE(summary.value(QLatin1String("compile_only")).toBool(), true);
        QCOMPARE(summary.value(QLatin1String("compiled")).toInt(), 2);
        QCOMPARE(m_server->requests().size(), 2); // one per task: nothing to fix after a clean compile

        RunStore store;
        QVERIFY(store.open(db));
        const QList<RunInfo> runs = store.runs();
        QCOMPARE(runs.size(), 1);
        QCOMPARE(runs.first().configJson.value(QLatin1String("compile_only")).toBool(), true);
        const QList<EvaluationRecord> evaluations = store.evaluations(runs.first().id);
        QCOMPARE(evaluations.size(), 2);
        for (const EvaluationRecord& e : evaluations) {
            QCOMPARE(e.status, QStringLiteral("no_device"));
            QCOMPARE(e.result.value(QLatin1String("echo")).toObject().value(QLatin1String("device")).toString(),
                     QStringLiteral("none"));
        }

        const Result md = runKwb({QStringLiteral("report"), QStringLiteral("--db"), db});
        QCOMPARE(md.exitCode, 0);
        QVERIFY2(md.out.contains(QStringLiteral("is compile-only: correctness not measured")), qPrintable(md.out));
        QVERIFY2(md.out.contains(QStringLiteral("| not measured |")), qPrintable(md.out));
        QVERIFY2(!md.out.contains(QStringLiteral("| 0.0 % [")), qPrintable(md.out)); // no 0 % correct
        const Result json = runKwb(
            {QStringLiteral("report"), QStringLiteral("--db"), db, QStringLiteral("--format"), QStringLiteral("json")});
        const QJsonObject run = QJsonDocument::fromJson(json.out.toUtf8())
                                    .object()
                                    .value(QLatin1String("runs"))
                                    .toArray()
                                    .first()
                                    .toObject();
        QCOMPARE(run.value(QLatin1String("compile_only")).toBool(), true);
        QCOMPARE(run.value(QLatin1String("overall")).toObject().value(QLatin1String("compiled")).toInt(), 2);
        QVERIFY(run.value(QLatin1String("unevaluated")).toArray().isEmpty());
    }

    static QString promptOf(const QJsonObject& request)
    {
        return request.value(QLatin1String("messages"))
            .toArray()
            .last()
            .toObject()
            .value(QLatin1String("content"))
            .toString();
    }

    // A machine fault is never the model's error: with one candidate at no_device and one at
    // compile_error, turn 2 is asked to fix the compile error, never the no_device one.
    void machineFaultIsNotFedBack()
    {
        // One request per sample (the scripted server does not announce n).
        m_server->enqueue(reply(QStringLiteral("no_device")));
        m_server->enqueue(reply(QStringLiteral("compile_error")));
        const QString db = newDb();
        QStringList args = runArgs(db, QStringLiteral("L1:1"));
        args[args.indexOf(QStringLiteral("zero-shot"))] = QStringLiteral("iterative");
        args << QStringLiteral("--n") << QStringLiteral("2") << QStringLiteral("--turns") << QStringLiteral("2");
        const Result r = runKwb(args);
        QVERIFY2(r.exitCode == 0, qPrintable(QStringLiteral("exit %1\n%2%3").arg(r.exitCode).arg(r.out, r.err)));
        const QList<QJsonObject> requests = m_server->requests();
        QCOMPARE(requests.size(), 4); // two samples on each of two turns
        for (const QJsonObject& request : requests.mid(2)) {
            const QString retry = promptOf(request);
            QVERIFY2(retry.contains(QStringLiteral("Status: compile_error")), qPrintable(retry));
            QVERIFY2(!retry.contains(QStringLiteral("no_device")), qPrintable(retry));
        }
    }

    // A turn of nothing but machine faults asks the model nothing more; the report lists the task
    // as not evaluated (a failure, not compiled), and the run is incomplete.
    void allMachineFaultsStopTheTask()
    {
        m_server->setDefaultReply(reply(QStringLiteral("no_device")));
        const QString db = newDb();
        QStringList args = runArgs(db, QStringLiteral("L1:1"));
        args[args.indexOf(QStringLiteral("zero-shot"))] = QStringLiteral("iterative");
        const Result r = runKwb(args);
        QVERIFY2(r.exitCode == 5, qPrintable(QStringLiteral("exit %1\n%2%3").arg(r.exitCode).arg(r.out, r.err)));
        QCOMPARE(m_server->requests().size(), 1);
        const Result json = runKwb(
            {QStringLiteral("report"), QStringLiteral("--db"), db, QStringLiteral("--format"), QStringLiteral("json")});
        const QJsonObject run = QJsonDocument::fromJson(json.out.toUtf8())
                                    .object()
                                    .value(QLatin1String("runs"))
                                    .toArray()
                                    .first()
                                    .toObject();
        QCOMPARE(run.value(QLatin1String("overall")).toObject().value(QLatin1String("tasks")).toInt(), 1);
        QCOMPARE(run.value(QLatin1String("overall")).toObject().value(QLatin1String("compiled")).toInt(), 0);
        QCOMPARE(run.value(QLatin1String("overall")).toObject().value(QLatin1String("correct")).toInt(), 0);
        const QJsonArray missing = run.value(QLatin1String("unevaluated")).toArray();
        QCOMPARE(missing.size(), 1);
        QCOMPARE(missing.first().toObject().value(QLatin1String("kind")).toString(), QStringLiteral("machine_failure"));
        QVERIFY(
            missing.first().toObject().value(QLatin1String("reason")).toString().contains(QStringLiteral("no_device")));
        const Result md = runKwb({QStringLiteral("report"), QStringLiteral("--db"), db});
        QVERIFY2(md.out.contains(QStringLiteral("Not evaluated:")), qPrintable(md.out));
    }

    // --evaluate-identical-once: the scripted server answers every sample with the same text, so
    // the first is evaluated and the others carry its verdict; the run stores the setting.
    void evaluateIdenticalOnce()
    {
        for (const bool once : {true, false}) {
            const QString db = newDb();
            QStringList args = runArgs(db, QStringLiteral("L1:1"));
            args << QStringLiteral("--n") << QStringLiteral("3");
            if (once)
                args << QStringLiteral("--evaluate-identical-once");
            const Result r = runKwb(args, 60000);
            QVERIFY2(r.exitCode == 0, qPrintable(QStringLiteral("exit %1\n%2%3").arg(r.exitCode).arg(r.out, r.err)));
            RunStore store;
            QVERIFY(store.open(db));
            const QList<RunInfo> runs = store.runs();
            QCOMPARE(runs.first().configJson.value(QLatin1String("evaluate_identical_once")).toBool(!once), once);
            const QList<EvaluationRecord> evaluations = store.evaluations(runs.first().id);
            QCOMPARE(evaluations.size(), 3);
            int reused = 0;
            for (const EvaluationRecord& e : evaluations) {
                QCOMPARE(e.status, QStringLiteral("correct"));
                reused += e.result.contains(QLatin1String("reused_from_candidate")) ? 1 : 0;
            }
            QCOMPARE(reused, once ? 2 : 0);
            QCOMPARE(r.err.contains(QStringLiteral("3 candidates evaluated (2 identical to an earlier answer, its "
                                                   "evaluation reused)")),
                     once);
            const Result md = runKwb({QStringLiteral("report"), QStringLiteral("--db"), db});
            QCOMPARE(md.out.contains(QStringLiteral("evaluated identical answers once: 2 of its 3 evaluations")), once);
        }
    }

    // Every evaluation took GPU 0's lease (the log says grant and release) and records whether
    // generation paused while it timed: on by default for the local scripted server, off when asked.
    void leaseLogAndPauseSetting()
    {
        const QString log = m_dir.filePath(QStringLiteral("leases-cli.log"));
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("KWB_GPU_LEASE_LOG"), log);
        for (const bool pause : {true, false}) {
            QFile::remove(log);
            const QString db = newDb();
            QStringList args = runArgs(db, QStringLiteral("L1:1"));
            if (!pause)
                args << QStringLiteral("--no-pause-generation-while-timing");
            const Result r = runKwb(args, 60000, environment);
            QVERIFY2(r.exitCode == 0, qPrintable(QStringLiteral("exit %1\n%2%3").arg(r.exitCode).arg(r.out, r.err)));
            RunStore store;
            QVERIFY(store.open(db));
            const QList<RunInfo> runs = store.runs();
            QCOMPARE(runs.first().configJson.value(QLatin1String("pause_generation_while_timing")).toBool(!pause),
                     pause);
            const QList<EvaluationRecord> evaluations = store.evaluations(runs.first().id);
            QCOMPARE(evaluations.size(), 1);
            QCOMPARE(evaluations.first().result.value(QLatin1String("generation_paused")).toBool(!pause), pause);
            QFile file(log);
            QVERIFY(file.open(QIODevice::ReadOnly));
            QStringList events;
            QStringList facts; // the run's device facts and profiles take the same lease (issue 11, item 7)
            for (const QByteArray& line : file.readAll().split('\n'))
                if (!line.isEmpty()) {
                    const QJsonObject o = QJsonDocument::fromJson(line).object();
                    QCOMPARE(o.value(QLatin1String("gpu")).toInt(-1), 0);
                    QVERIFY(!o.value(QLatin1String("key")).toString().isEmpty());
                    const QString holder = o.value(QLatin1String("holder")).toString();
                    if (holder.startsWith(QLatin1String("run facts: ")))
                        facts << holder.section(QLatin1Char(' '), 2, 2) + QLatin1Char(' ') +
                                     o.value(QLatin1String("event")).toString();
                    else {
                        QVERIFY2(holder.contains(QStringLiteral("evaluate job")), qPrintable(holder));
                        events << o.value(QLatin1String("event")).toString();
                    }
                }
            QCOMPARE(events, (QStringList{QStringLiteral("grant"), QStringLiteral("release")})); // free: taken at once
            QVERIFY2(facts.startsWith(QStringLiteral("device grant")) &&
                         facts.contains(QStringLiteral("device release")),
                     qPrintable(facts.join(QStringLiteral(", "))));
        }
    }

    void trialCountsAreBounded_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("expected");
        const QString candidate = QStringLiteral(KWB_SOURCE_DIR "/README.md"); // never read: refused before
        const QStringList eval{QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("eval"),
                               QStringLiteral("L1/1"), candidate, QStringLiteral("--trials")};
        QTest::newRow("eval --trials 0") << (eval + QStringList{QStringLiteral("0")})
                                         << QStringLiteral("--trials must be between 1 and 10000, got 0");
        QTest::newRow("eval --trials 10001") << (eval + QStringList{QStringLiteral("10001")})
                                             << QStringLiteral("--trials must be between 1 and 10000, got 10001");
        QTest::newRow("run --timing-trials 0") << QStringList{QStringLiteral("--timing-trials"), QStringLiteral("0")}
                                               << QStringLiteral("--timing-trials must be between 1 and 10000, got 0");
        QTest::newRow("run --timing-trials 10001")
            << QStringList{QStringLiteral("--timing-trials"), QStringLiteral("10001")}
            << QStringLiteral("--timing-trials must be between 1 and 10000, got 10001");
    }

    void trialCountsAreBounded()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, expected);
        if (!arguments.contains(QStringLiteral("eval")))
            arguments = runArgs(newDb(), QStringLiteral("L1:1")) + arguments;
        const Result r = runKwb(arguments);
        QVERIFY2(r.exitCode == 2, qPrintable(QStringLiteral("exit %1\n%2").arg(r.exitCode).arg(r.err)));
        QVERIFY2(r.err.contains(expected), qPrintable(r.err));
        QCOMPARE(m_server->requests().size(), 0);
    }

    // Issue 38: `kwb run --db` on what is not a run store that may be written: exit 4 before any
    // model request, the file left as it was, the message saying what it is and what to do.
    void databaseThatIsNotAWritableStore_data()
    {
        QTest::addColumn<QString>("kind");
        QTest::addColumn<QString>("expected");
        QTest::newRow("foreign") << QStringLiteral("foreign")
                                 << QStringLiteral("SQLite database of another program (tables: foo)");
        QTest::newRow("empty") << QStringLiteral("empty") << QStringLiteral("delete the empty file");
        QTest::newRow("damaged") << QStringLiteral("damaged") << QStringLiteral("damaged SQLite database");
        QTest::newRow("read-only file") << QStringLiteral("read-only file")
                                        << QStringLiteral("may not be written: the file is read-only");
        QTest::newRow("read-only folder")
            << QStringLiteral("read-only folder") << QStringLiteral("may not be written: its folder");
    }

    void databaseThatIsNotAWritableStore()
    {
        QFETCH(QString, kind);
        QFETCH(QString, expected);
        const QString folder =
            m_dir.filePath(QStringLiteral("kind-") + QString(kind).replace(QLatin1Char(' '), QLatin1Char('-')));
        QVERIFY(QDir().mkpath(folder));
        const QString db = QDir(folder).filePath(QStringLiteral("runs.sqlite"));
        if (kind == QLatin1String("foreign"))
            QVERIFY(kwb::test::writeForeignDatabase(db));
        else if (kind == QLatin1String("empty"))
            QVERIFY(kwb::test::writeEmptyFile(db));
        else
            QVERIFY(kwb::test::writeStore(db, kind == QLatin1String("damaged") ? 40 : 2));
        if (kind == QLatin1String("damaged"))
            QVERIFY(kwb::test::overwriteTwoPages(db));
        std::optional<kwb::test::ReadOnlyGuard> readOnly;
        if (kind.startsWith(QLatin1String("read-only")))
            readOnly.emplace(kind == QLatin1String("read-only file") ? db : folder);
        const auto before = kwb::test::FileSnapshot::of(db);
        const Result r = runKwb(runArgs(db, QStringLiteral("L1:1")) << QStringLiteral("--json"));
        QVERIFY2(r.exitCode == 4, qPrintable(QStringLiteral("exit %1\n%2").arg(r.exitCode).arg(r.err)));
        QVERIFY2(r.err.contains(expected), qPrintable(r.err));
        QVERIFY2(r.out.contains(QLatin1String("bad_database")), qPrintable(r.out));
        QCOMPARE(m_server->requests().size(), 0);
        const auto after = kwb::test::FileSnapshot::of(db);
        QVERIFY2(after == before, qPrintable(before.describe() + QStringLiteral("\n") + after.describe()));
        // kwb report reads a read-only store as it is.
        if (readOnly) {
            const Result report = runKwb({QStringLiteral("report"), QStringLiteral("--db"), db});
            QVERIFY2(report.exitCode == 0, qPrintable(report.err));
            QVERIFY2(report.err.contains(QLatin1String("opened read-only")), qPrintable(report.err));
            QVERIFY(kwb::test::FileSnapshot::of(db) == before);
        }
    }

    void resumeOfUnknownRun()
    {
        const QString db = newDb();
        QVERIFY(runKwb(runArgs(db)).exitCode == 0);
        const Result r =
            runKwb(base() << QStringLiteral("--db") << db << QStringLiteral("--resume") << QStringLiteral("9"));
        QCOMPARE(r.exitCode, 4);
        const Result missing = runKwb(base() << QStringLiteral("--db") << m_dir.filePath(QStringLiteral("none.sqlite"))
                                             << QStringLiteral("--resume") << QStringLiteral("1"));
        QCOMPARE(missing.exitCode, 4);
        QVERIFY(!QFile::exists(m_dir.filePath(QStringLiteral("none.sqlite"))));
    }

    void sigintCancelsAndResumeFinishes()
    {
        // The first task's answer comes at once, the second's only after the interrupt.
        m_server->enqueue(reply(QStringLiteral("correct")));
        m_server->setDefaultReply(reply(QStringLiteral("correct"), 20000));
        const QString db = newDb();
        QStringList args = runArgs(db);
        QProcess kwb;
        QSignalSpy finished(&kwb, &QProcess::finished);
        kwb.start(QStringLiteral(KWB_CLI), args << QStringLiteral("--turns") << QStringLiteral("1"));
        QVERIFY(kwb.waitForStarted(10000));
        QTRY_VERIFY_WITH_TIMEOUT(m_server->requests().size() >= 2, 30000);
        {
            RunStore store; // wait for the first evaluation to be committed
            QVERIFY(store.open(db));
            QTRY_VERIFY_WITH_TIMEOUT(!store.runs().isEmpty() && store.evaluations(store.runs().first().id).size() == 1,
                                     30000);
        }
        ::kill(pid_t(kwb.processId()), SIGINT);
        QVERIFY(finished.wait(20000));
        const QString err = QString::fromUtf8(kwb.readAllStandardError());
        QCOMPARE(kwb.exitStatus(), QProcess::NormalExit);
        QVERIFY2(kwb.exitCode() == 130, qPrintable(QStringLiteral("exit %1\n%2").arg(kwb.exitCode()).arg(err)));
        QVERIFY2(err.contains(QStringLiteral("--resume 1")), qPrintable(err));
        {
            RunStore store;
            QVERIFY(store.open(db));
            QCOMPARE(store.run(1)->status, RunStatus::Cancelled);
            QCOMPARE(store.evaluations(1).size(), 1);
        }

        // Resume: only the unfinished task is asked for again, with the stored configuration.
        m_server->setDefaultReply(reply(QStringLiteral("incorrect")));
        const int before = int(m_server->requests().size());
        const Result r = runKwb(base() << QStringLiteral("--db") << db << QStringLiteral("--resume")
                                       << QStringLiteral("1") << QStringLiteral("--json"));
        QVERIFY2(r.exitCode == 0, qPrintable(QStringLiteral("exit %1\n%2").arg(r.exitCode).arg(r.err)));
        QCOMPARE(int(m_server->requests().size()) - before, 1);
        QCOMPARE(m_server->requests().last().value(QLatin1String("model")).toString(), QStringLiteral("m"));
        const QJsonObject summary = QJsonDocument::fromJson(r.out.toUtf8()).object();
        QCOMPARE(summary.value(QLatin1String("correct")).toInt(), 1);
        QCOMPARE(summary.value(QLatin1String("compiled")).toInt(), 2);
        RunStore store;
        QVERIFY(store.open(db));
        QCOMPARE(store.runs().size(), 1);
        QCOMPARE(store.run(1)->status, RunStatus::Finished);
        QCOMPARE(store.evaluations(1).size(), 2);
    }
};

QTEST_GUILESS_MAIN(TestCliRun)
#include "tst_cli_run.moc"
