// kwb-fixture-llm --recorded DIR (tests/tools/fixturellmserver.cpp; issue 33 item 5): serves
// the generations of a folder laid out as `kwb import kernelbench` reads it, per task, over the
// OpenAI API. Against tests/fixtures/real-generations (real layout, synthetic contents: its
// README), whose files are named here, not found by the server's rules: L1/1 has sample 0 (a
// module and the whole response beside it: the response is served) and sample 1 (a module only:
// served in a ```python fence), L2/1 one module in another run folder. Then whole regimes
// (`kwb run` with the fake worker) store those texts as the candidates of the right tasks.

#include "core/store/runstore.h"
#include "core/study/provenance.h"

#include <QDir>
#include <QEventLoop>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QNetworkAccessManager>
#include <QNetworkReply>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <optional>
#include <utility>

using namespace kwb;

namespace {

const QString kFixture = QStringLiteral(KWB_REAL_GENERATIONS_DIR);
const QString kLevel1Run =
    kFixture + QStringLiteral("/runs/test_time_scaling_best_of_n_Qwen2.5-Coder-7B-Instruct_level1");

QString readText(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(path));
    return QString::fromUtf8(f.readAll());
}

void write(const QString& path, const QString& text)
{
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly))
        qFatal("cannot write %s", qPrintable(path));
    f.write(text.toUtf8());
}

QString fenced(const QString& module)
{
    return QStringLiteral("```python\n") + module +
           (module.endsWith(QLatin1Char('\n')) ? QString() : QStringLiteral("\n")) + QStringLiteral("```\n");
}

/// What the fixture holds per task, in sample order.
QStringList recordedL1_1()
{
    return {readText(kLevel1Run + QStringLiteral("/level_1_problem_1_solution_0_response.txt")),
            fenced(readText(kLevel1Run + QStringLiteral("/level_1_problem_1_solution_1_kernel.py")))};
}

QString recordedL2_1()
{
    return fenced(readText(kFixture + QStringLiteral("/runs/test_hf_level_2/level_2_problem_1_sample_0_kernel.py")));
}

/// A kwb-fixture-llm started with `arguments`, killed when this goes.
struct Server
{
    QProcess process;
    QUrl base;
    QByteArray err;

    bool start(const QStringList& arguments)
    {
        process.start(QStringLiteral(KWB_FIXTURE_LLM),
                      arguments + QStringList{QStringLiteral("--delay-ms"), QStringLiteral("0")});
        if (!process.waitForReadyRead(10000))
            return false;
        base = QUrl(QString::fromUtf8(process.readLine()).trimmed());
        return base.isValid() && !base.isEmpty();
    }
    ~Server()
    {
        if (process.state() != QProcess::NotRunning) {
            process.kill();
            process.waitForFinished();
        }
    }
};

/// The server's exit code and stderr when it refuses to start.
std::pair<int, QByteArray> refusal(const QStringList& arguments)
{
    QProcess p;
    p.start(QStringLiteral(KWB_FIXTURE_LLM), arguments);
    if (!p.waitForFinished(10000)) {
        p.kill();
        p.waitForFinished();
        return {-1, {}};
    }
    return {p.exitCode(), p.readAllStandardError()};
}

} // namespace

class TestFixtureLlmRecorded : public QObject
{
    Q_OBJECT

    QNetworkAccessManager m_net;

    /// The answers to one chat request (one per choice).
    QStringList ask(const QUrl& base, const QString& prompt, std::optional<qint64> seed = std::nullopt, int n = 1)
    {
        QNetworkRequest request(QUrl(base.toString() + QStringLiteral("/chat/completions")));
        request.setHeader(QNetworkRequest::ContentTypeHeader, QStringLiteral("application/json"));
        QJsonObject body{
            {QStringLiteral("model"), QStringLiteral("recorded-model")},
            {QStringLiteral("messages"), QJsonArray{QJsonObject{{QStringLiteral("role"), QStringLiteral("user")},
                                                                {QStringLiteral("content"), prompt}}}}};
        if (seed)
            body.insert(QStringLiteral("seed"), *seed);
        if (n > 1)
            body.insert(QStringLiteral("n"), n);
        QNetworkReply* reply = m_net.post(request, QJsonDocument(body).toJson());
        QEventLoop loop;
        connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
        loop.exec();
        const QJsonObject answer = QJsonDocument::fromJson(reply->readAll()).object();
        reply->deleteLater();
        QStringList texts;
        for (const QJsonValue& c : answer.value(QLatin1String("choices")).toArray())
            texts << c.toObject().value(QLatin1String("message")).toObject().value(QLatin1String("content")).toString();
        return texts;
    }

    QString answerFor(const QUrl& base, const QString& task, std::optional<qint64> seed = std::nullopt)
    {
        const QStringList texts = ask(base, QStringLiteral("Write your answer for task %1.").arg(task), seed);
        return texts.value(0);
    }

    /// `kwb run` against `endpoint` with the fake worker, KernelBench's format; the run's id.
    qint64 runRegime(const QString& endpoint, const QString& db, const QStringList& arguments)
    {
        QProcess kwb;
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.remove(QStringLiteral("KWB_PROMPTS_DIR"));
        kwb.setProcessEnvironment(environment);
        kwb.start(QStringLiteral(KWB_CLI),
                  QStringList{QStringLiteral("--worker=" KWB_FAKEWORKER), QStringLiteral("run"),
                              QStringLiteral("--answer-format"), QStringLiteral("kernelbench"),
                              QStringLiteral("--endpoint"), endpoint, QStringLiteral("--model"),
                              QStringLiteral("recorded-model"), QStringLiteral("--db"), db,
                              QStringLiteral("--no-os-sandbox")} +
                      arguments);
        if (!kwb.waitForFinished(120000)) {
            kwb.kill();
            kwb.waitForFinished();
            qWarning("kwb run did not finish");
            return 0;
        }
        if (kwb.exitCode() != 0) {
            qWarning("kwb run: exit %d: %s", kwb.exitCode(), kwb.readAllStandardError().constData());
            return 0;
        }
        RunStore store;
        if (!store.open(db) || store.runs().size() != 1)
            return 0;
        return store.runs().first().id;
    }

private Q_SLOTS:
    void eachTaskGetsItsRecordedSamplesInTurn()
    {
        const QStringList l1 = recordedL1_1();
        const QString l2 = recordedL2_1();
        QVERIFY(l1[0].contains(QLatin1String("```python\n")) &&
                !l1[0].startsWith(QLatin1String("```"))); // a whole response
        QVERIFY(l1[0] != l1[1] && l1[1] != l2);

        Server server;
        QVERIFY(server.start({QStringLiteral("--recorded"), kFixture}));
        QCOMPARE(answerFor(server.base, QStringLiteral("L1/1")), l1[0]);
        QCOMPARE(answerFor(server.base, QStringLiteral("L2/1")), l2);
        QCOMPARE(answerFor(server.base, QStringLiteral("L1/1")), l1[1]);
        QCOMPARE(answerFor(server.base, QStringLiteral("L1/1")), l1[0]); // wraps
        QCOMPARE(answerFor(server.base, QStringLiteral("L2/1")), l2);
        // n choices take n answers in turn.
        QCOMPARE(ask(server.base, QStringLiteral("Write your answer for task L1/1."), 5, 3),
                 (QStringList{l1[1], l1[0], l1[1]}));

        // A task of this workbench the folder has no generation of: said in plain text, no module.
        const QString none = answerFor(server.base, QStringLiteral("L1/2"));
        QVERIFY2(none.startsWith(QLatin1String("No recorded answer for task L1/2")), qPrintable(none));
        QVERIFY2(none.contains(QLatin1String("L1/1, L1/57, L2/1")), qPrintable(none));
        QVERIFY(!none.contains(QLatin1String("```")));

        // Another role's turn (no "answer for task"): the fixed note, not a recorded answer, and
        // it does not move the task's counter.
        const QString note = ask(server.base, QStringLiteral("You are the feedback triager. Task L1/1.\n\n") + l1[0] +
                                                  QStringLiteral("\nDiagnose the report for the kernel writer."))
                                 .value(0);
        QVERIFY2(note.startsWith(QLatin1String("Notes on L1/1: none recorded.")), qPrintable(note));
        QVERIFY(!note.contains(QLatin1String("```")));
        QCOMPARE(answerFor(server.base, QStringLiteral("L1/1")), l1[0]);
    }

    void statelessPicksTheSampleBySeed()
    {
        const QStringList l1 = recordedL1_1();
        Server server;
        QVERIFY(server.start({QStringLiteral("--recorded"), kFixture, QStringLiteral("--stateless")}));
        // Sample (seed + choice) mod count, the same however often it is asked.
        QCOMPARE(answerFor(server.base, QStringLiteral("L1/1"), 1235), l1[1]);
        QCOMPARE(answerFor(server.base, QStringLiteral("L1/1"), 1235), l1[1]);
        QCOMPARE(answerFor(server.base, QStringLiteral("L1/1"), 1234), l1[0]);
        QCOMPARE(ask(server.base, QStringLiteral("Write your answer for task L1/1."), 7, 2),
                 (QStringList{l1[1], l1[0]}));
        QCOMPARE(answerFor(server.base, QStringLiteral("L1/1")), l1[0]); // no seed: sample 0
        QCOMPARE(answerFor(server.base, QStringLiteral("L2/1"), 1235), recordedL2_1());
    }

    // The texts go out as they were written (the scripted server fills in {seed} and {i}
    // elsewhere; real answers have such braces in their code), and any layout the import reads
    // is served by its rules: per-problem folders, a response without a module.
    void answersAreSentByteForByte()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        QVERIFY(QDir().mkpath(tmp.filePath(QStringLiteral("gens/level1/problem1"))));
        const QString module =
            QStringLiteral("import torch\nimport torch.nn as nn\n\nclass ModelNew(nn.Module):\n"
                           "    def forward(self, a, b):\n        names = [f\"w{i}\" for i in range(2)]  # {seed}\n"
                           "        return torch.matmul(a, b)");
        write(tmp.filePath(QStringLiteral("gens/level1/problem1/sample0.py")), module);
        const QString response = QStringLiteral("Here it is, ünïcode and all: {i} {seed}\n\n") + fenced(module);
        write(tmp.filePath(QStringLiteral("gens/level_1_problem_1_sample_1.txt")), response);
        write(tmp.filePath(QStringLiteral("gens/notes.md")), QStringLiteral("not a generation\n"));

        Server server;
        QVERIFY(server.start({QStringLiteral("--recorded"), tmp.filePath(QStringLiteral("gens"))}));
        QCOMPARE(answerFor(server.base, QStringLiteral("L1/1"), 42), fenced(module));
        QCOMPARE(answerFor(server.base, QStringLiteral("L1/1"), 42), response);
    }

    // The server names itself by the model it lists (core/study/provenance.h): a run that takes
    // the listed model, as the Launch page does, records that its answers were replayed.
    void listsTheRecordedModel_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("model");
        QTest::addColumn<int>("source");
        QTest::newRow("recorded") << QStringList{QStringLiteral("--recorded"), kFixture}
                                  << QString::fromLatin1(kRecordedModel) << int(AnswerSource::RecordedServer);
        // A folder whose generation configs name the model that wrote the text: the server says whose.
        QTest::newRow("recorded, the model named")
            << QStringList{QStringLiteral("--recorded"), QStringLiteral(KWB_RECORDED_EXAMPLE_DIR)}
            << QStringLiteral("recorded-model:Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8")
            << int(AnswerSource::RecordedServer);
        QTest::newRow("fixtures") << QStringList{QStringLiteral("--candidates"), QStringLiteral(KWB_FIXTURE_CANDIDATES)}
                                  << QString::fromLatin1(kFixtureModel) << int(AnswerSource::FixtureServer);
    }
    void listsTheRecordedModel()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, model);
        QFETCH(int, source);
        Server server;
        QVERIFY(server.start(arguments));
        QNetworkReply* reply = m_net.get(QNetworkRequest(QUrl(server.base.toString() + QStringLiteral("/models"))));
        QEventLoop loop;
        connect(reply, &QNetworkReply::finished, &loop, &QEventLoop::quit);
        loop.exec();
        const QJsonArray data =
            QJsonDocument::fromJson(reply->readAll()).object().value(QLatin1String("data")).toArray();
        reply->deleteLater();
        QCOMPARE(data.size(), 1);
        const QString listed = data.first().toObject().value(QLatin1String("id")).toString();
        QCOMPARE(listed, model);
        RunConfig config;
        config.model = listed;
        QCOMPARE(int(answerSource(config)), source);
    }

    void aFolderWithoutGenerationsIsRefused()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        write(tmp.filePath(QStringLiteral("level_1_problem_157_sample_0_kernel.py")), QStringLiteral("import torch\n"));
        const auto [code, err] = refusal({QStringLiteral("--recorded"), tmp.path()});
        QCOMPARE(code, 2);
        QVERIFY2(err.contains("the worker has no task L1/157") && err.contains("holds no generation of a task here"),
                 err.constData());
        const auto [missingCode, missingErr] =
            refusal({QStringLiteral("--recorded"), tmp.filePath(QStringLiteral("missing"))});
        QCOMPARE(missingCode, 2);
        QVERIFY2(missingErr.contains("no such folder"), missingErr.constData());
        const auto [formatCode, formatErr] = refusal(
            {QStringLiteral("--recorded"), kFixture, QStringLiteral("--answer-format"), QStringLiteral("native")});
        QCOMPARE(formatCode, 2);
        QVERIFY2(formatErr.contains("KernelBench"), formatErr.constData());
    }

    // Whole regimes on the recorded texts: every generator candidate stored is a recorded answer
    // of its own task; the multi-turn regimes go through the samples turn by turn; the agent's
    // other roles get the note.
    void aRegimeRunsOnTheRecordedTexts_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<int>("turns");
        QTest::addColumn<int>("samples");
        QTest::newRow("zero-shot") << QStringList{QStringLiteral("--regime"), QStringLiteral("zero-shot"),
                                                  QStringLiteral("--n"), QStringLiteral("3")}
                                   << 1 << 3;
        const QStringList multiTurn{QStringLiteral("--n"), QStringLiteral("1"), QStringLiteral("--turns"),
                                    QStringLiteral("3"), QStringLiteral("--no-stop-when-correct")};
        QTest::newRow("iterative") << QStringList{QStringLiteral("--regime"), QStringLiteral("iterative")} + multiTurn
                                   << 3 << 1;
        QTest::newRow("agent") << QStringList{QStringLiteral("--regime"), QStringLiteral("agent")} + multiTurn << 3
                               << 1;
    }

    void aRegimeRunsOnTheRecordedTexts()
    {
        QFETCH(QStringList, arguments);
        QFETCH(int, turns);
        QFETCH(int, samples);
        const QStringList l1 = recordedL1_1();
        const QString l2 = recordedL2_1();
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        Server server;
        QVERIFY(server.start({QStringLiteral("--recorded"), kFixture}));
        const QString db = tmp.filePath(QStringLiteral("runs.sqlite"));
        const qint64 run = runRegime(server.base.toString(), db,
                                     arguments + QStringList{QStringLiteral("--tasks"), QStringLiteral("L1:1,L2:1")});
        QVERIFY(run > 0);

        RunStore store;
        QVERIFY(store.open(db));
        const QList<EvaluationRecord> rows = store.evaluations(run);
        QCOMPARE(rows.size(), 2 * turns * samples);
        QHash<QString, QStringList> byTask; // task -> answers, by turn then sample
        QMap<std::pair<int, int>, QString> l1ByUnit;
        const QStringList answerRoles{QStringLiteral("generator"), QStringLiteral("retry")}; // iterative's later turns
        for (const EvaluationRecord& e : rows) {
            QVERIFY2(answerRoles.contains(e.role), qPrintable(e.role));
            const QString answer = store.candidate(e.candidateId)->answer;
            byTask[e.task] << answer;
            if (e.task == QLatin1String("L1/1"))
                l1ByUnit.insert({e.turn, e.sample}, answer);
        }
        QCOMPARE(byTask.keys().size(), 2);
        for (const QString& answer : byTask.value(QStringLiteral("L2/1")))
            QCOMPARE(answer, l2);
        if (turns == 1) {
            // Samples may be asked at once: together they are the recorded ones, in turn from 0.
            QStringList got = byTask.value(QStringLiteral("L1/1")), expected{l1[0], l1[1], l1[0]};
            got.sort();
            expected.sort();
            QCOMPARE(got, expected);
        } else {
            // Turn t (one sample each) is the task's t-th answer: recorded sample (t - 1) mod 2.
            QCOMPARE(l1ByUnit.size(), turns);
            for (int t = 1; t <= turns; ++t)
                QCOMPARE(l1ByUnit.value({t, 0}), l1[(t - 1) % 2]);
        }

        // Every other role's answer is the note, with its task.
        int others = 0;
        for (const UnitResponse& r : store.responses(run)) {
            if (answerRoles.contains(r.unit.role))
                continue;
            ++others;
            QVERIFY2(r.response.text.startsWith(QStringLiteral("Notes on %1: none recorded.").arg(r.unit.task)),
                     qPrintable(r.unit.role + QLatin1Char(' ') + r.response.text));
        }
        if (arguments.contains(QStringLiteral("agent")))
            QVERIFY(others > 0);
        else
            QCOMPARE(others, 0);
    }

    // DIR may be one run folder: only its model's answers are served; a task it lacks is stored
    // with the plain-text answer that says so.
    void aTaskWithoutRecordingsIsStoredAsSaid()
    {
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        Server server;
        QVERIFY(server.start({QStringLiteral("--recorded"), kLevel1Run}));
        const QString db = tmp.filePath(QStringLiteral("runs.sqlite"));
        const qint64 run = runRegime(server.base.toString(), db,
                                     {QStringLiteral("--regime"), QStringLiteral("zero-shot"), QStringLiteral("--n"),
                                      QStringLiteral("1"), QStringLiteral("--tasks"), QStringLiteral("L1:1,L2:1")});
        QVERIFY(run > 0);
        RunStore store;
        QVERIFY(store.open(db));
        const QList<EvaluationRecord> rows = store.evaluations(run);
        QCOMPARE(rows.size(), 2);
        for (const EvaluationRecord& e : rows) {
            const QString answer = store.candidate(e.candidateId)->answer;
            if (e.task == QLatin1String("L1/1"))
                QCOMPARE(answer, recordedL1_1().at(0));
            else
                QVERIFY2(answer.startsWith(QLatin1String("No recorded answer for task L2/1")), qPrintable(answer));
        }
    }

    // The real model text shipped for an example study (packaging/examples/recorded-qwen3-coder-480b,
    // issue 38 item 3): its licence beside it, every one of the study's 30 tasks served its own
    // file, and the README's zero-shot run stores them as recorded answers.
    void recordedQwen3CoderServesTheStudysTasks()
    {
        const QString dir = QStringLiteral(KWB_RECORDED_EXAMPLE_DIR);
        QVERIFY(readText(dir + QStringLiteral("/LICENSE")).startsWith(QLatin1String("MIT License")));
        QVERIFY(readText(dir + QStringLiteral("/README.md"))
                    .contains(QLatin1String("9202a5c5786ab959fcaa3b4ce0356348bb87c86a")));
        Server server;
        QVERIFY(server.start({QStringLiteral("--recorded"), dir}));
        QStringList study;
        for (int level = 1; level <= 3; ++level) {
            for (int problem = 1; problem <= 10; ++problem) {
                const QString task = QStringLiteral("L%1/%2").arg(level).arg(problem);
                study << task;
                const QString file =
                    dir + QStringLiteral("/runs/qwencoder_level%1_run/level_%1_problem_%2_sample_0_kernel.py")
                              .arg(level)
                              .arg(problem);
                QCOMPARE(answerFor(server.base, task), fenced(readText(file)));
            }
        }
        server.process.waitForReadyRead(1000);
        const QByteArray err = server.process.readAllStandardError();
        QVERIFY2(err.contains("30 recorded answers of 30 tasks"), err.constData());

        // The README's zero-shot run, on the two tasks the fake worker knows: each stores its file.
        QTemporaryDir tmp;
        QVERIFY(tmp.isValid());
        Server fresh;
        QVERIFY(fresh.start({QStringLiteral("--recorded"), dir}));
        const QString db = tmp.filePath(QStringLiteral("study.db"));
        const qint64 run = runRegime(fresh.base.toString(), db,
                                     {QStringLiteral("--regime"), QStringLiteral("zero-shot"), QStringLiteral("--n"),
                                      QStringLiteral("1"), QStringLiteral("--tasks"), QStringLiteral("L1:1,L2:1")});
        QVERIFY(run > 0);
        RunStore store;
        QVERIFY(store.open(db));
        QCOMPARE(runProvenance(store.runs().first()).source, AnswerSource::RecordedServer);
        const QList<EvaluationRecord> rows = store.evaluations(run);
        QCOMPARE(rows.size(), 2);
        for (const EvaluationRecord& e : rows) {
            const int level = e.task.mid(1, 1).toInt();
            QCOMPARE(
                store.candidate(e.candidateId)->answer,
                fenced(readText(
                    dir +
                    QStringLiteral("/runs/qwencoder_level%1_run/level_%1_problem_1_sample_0_kernel.py").arg(level))));
        }
    }
};

QTEST_GUILESS_MAIN(TestFixtureLlmRecorded)
#include "tst_fixture_llm_recorded.moc"
