// RunStore: create, reopen, WAL, migrations (and a failed one rolled back), refusal of a newer
// file, every insert visible after reopening, the resume API, and a writer killed with SIGKILL
// mid-run: every row it reported committed is there and the file passes integrity_check.
//
// The killed writer is this test binary started again with `--child-writer FILE`.
//
// What a file is (issue 38), on real files: another program's SQLite database, a 0-byte file, a
// store with two pages overwritten, stores in a read-only folder and read-only store files; each
// checked by its bytes, mtime and the names beside it after opening, since tests may run as root.

#include "../support/storefiles.h"
#include "core/config/runconfig.h"
#include "core/store/runstore.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cstdio>

using namespace kwb;

namespace {

QJsonObject evaluation(const QString& status, double speedup, double maxAbsDiff)
{
    return QJsonObject{{QStringLiteral("status"), status},
                       {QStringLiteral("speedup"), speedup},
                       {QStringLiteral("correctness"), QJsonObject{{QStringLiteral("max_abs_diff"), maxAbsDiff}}}};
}

struct Chain
{
    qint64 prompt = 0, response = 0, candidate = 0, evaluation = 0;
};

// A prompt, its response, the parsed candidate and (when status is given) its evaluation.
std::optional<Chain> addChain(RunStore& store, qint64 runId, const QString& task, int turn, int sample,
                              const QString& role, const QString& status = QString())
{
    Chain chain;
    const auto prompt = store.addPrompt({0, runId, task, turn, sample, role, QStringLiteral("prompt %1").arg(sample),
                                         sha256Hex(QStringLiteral("template"))});
    if (!prompt)
        return std::nullopt;
    chain.prompt = *prompt;
    const auto response = store.addResponse(
        {0, chain.prompt, QStringLiteral("answer %1").arg(sample), 100 + sample, 200 + sample, 1500, QString()});
    if (!response)
        return std::nullopt;
    chain.response = *response;
    CandidateRecord record;
    record.responseId = chain.response;
    record.task = task;
    record.turn = turn;
    record.sample = sample;
    record.cuda = QStringLiteral("__global__ k");
    record.python = QStringLiteral("def forward(x): ...");
    record.parsedOk = true;
    record.blocksFrom = CandidateBlocksFrom::Client;
    const auto candidate = store.addCandidate(record);
    if (!candidate)
        return std::nullopt;
    chain.candidate = *candidate;
    if (!status.isEmpty()) {
        const auto evaluationId = store.addEvaluation(chain.candidate, evaluation(status, 1.25, 3e-6));
        if (!evaluationId)
            return std::nullopt;
        chain.evaluation = *evaluationId;
    }
    return chain;
}

// The writer the kill test ends: it commits chain after chain and reports each evaluation id on
// stdout once its insert returned (so the parent knows it is on disk as far as SQLite can say).
int childWriter(const QString& path)
{
    RunStore store;
    if (!store.open(path)) {
        std::fprintf(stderr, "%s\n", qPrintable(store.errorString()));
        return 2;
    }
    const auto runId = store.createRun(QStringLiteral("killed"), QStringLiteral("zero_shot"), QJsonObject());
    if (!runId)
        return 3;
    std::printf("run %lld\n", static_cast<long long>(*runId));
    std::fflush(stdout);
    const QString bulk(4096, QLatin1Char('x')); // big enough that pages spill while the kill lands
    for (int i = 0; i < 1000000; ++i) {
        const auto prompt = store.addPrompt(
            {0, *runId, QStringLiteral("L1/%1").arg(i), 0, 0, QStringLiteral("generator"), bulk, QString()});
        if (!prompt)
            return 4;
        const auto response = store.addResponse({0, *prompt, bulk, 1, 2, 3, QString()});
        if (!response)
            return 5;
        CandidateRecord record;
        record.responseId = *response;
        record.task = QStringLiteral("L1/%1").arg(i);
        record.cuda = bulk;
        record.python = bulk;
        const auto candidate = store.addCandidate(record);
        if (!candidate)
            return 6;
        const auto evaluationId = store.addEvaluation(*candidate, evaluation(QStringLiteral("correct"), 1.0, 0.0));
        if (!evaluationId)
            return 7;
        std::printf("committed %lld\n", static_cast<long long>(*evaluationId));
        std::fflush(stdout);
    }
    return 0;
}

} // namespace

class TestRunStore : public QObject
{
    Q_OBJECT

    QTemporaryDir m_dir;

    QString dbPath(const QString& name = QString()) const
    {
        return m_dir.filePath((name.isEmpty() ? QString::fromLatin1(QTest::currentTestFunction()) : name) +
                              QStringLiteral(".kwbrun"));
    }

private Q_SLOTS:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void createAndReopen()
    {
        const QString path = dbPath();
        RunConfig config;
        config.model = QStringLiteral("qwen2.5-coder-7b-instruct");
        config.endpoint = QStringLiteral("http://127.0.0.1:8080/v1");
        config.templates.insert(QStringLiteral("zero_shot"), QStringLiteral("abc"));
        config.seeds.model = 1234;
        config.protocolProfile = QStringLiteral("kernelbench");
        config.gpu = decodeDeviceFacts(
            QJsonObject{{QStringLiteral("available"), true}, {QStringLiteral("name"), QStringLiteral("NVIDIA H200")}});
        config.versions.kwb = QStringLiteral(KWB_VERSION);
        config.tasks = QStringList{QStringLiteral("L2/1"), QStringLiteral("L1/3")};
        qint64 runId = 0;
        Chain chain;
        {
            RunStore store;
            QVERIFY2(store.open(path), qPrintable(store.errorString()));
            QCOMPARE(store.fileSchemaVersion(), RunStore::schemaVersion());
            QCOMPARE(store.journalMode(), QStringLiteral("wal"));
            QVERIFY(store.runs().isEmpty());
            const auto id = store.createRun(QStringLiteral("first"), QStringLiteral("zero_shot"), config.toJson());
            QVERIFY2(id, qPrintable(store.errorString()));
            runId = *id;
            const auto added = addChain(store, runId, QStringLiteral("L2/1"), 0, 0, QStringLiteral("generator"),
                                        QStringLiteral("correct"));
            QVERIFY2(added, qPrintable(store.errorString()));
            chain = *added;
            // Foreign keys are on: a prompt of a run that does not exist is refused.
            QVERIFY(!store.addPrompt({0, runId + 100, QStringLiteral("L1/1"), 0, 0, QStringLiteral("generator"),
                                      QStringLiteral("x"), QString()}));
            QVERIFY(store.errorString().contains(QLatin1String("FOREIGN KEY"), Qt::CaseInsensitive));
            // The status column only takes the three states.
            QVERIFY(!store.setRunStatus(runId, QStringLiteral("exploded")));
            QVERIFY(!store.setRunStatus(runId + 100, RunStatus::Finished));
            QVERIFY(store.setRunStatus(runId, RunStatus::Finished));
        }
        // A second instance (another connection) sees everything.
        RunStore store;
        QVERIFY2(store.open(path), qPrintable(store.errorString()));
        QCOMPARE(store.journalMode(), QStringLiteral("wal"));
        const QList<RunInfo> runs = store.runs();
        QCOMPARE(runs.size(), 1);
        const RunInfo info = runs.first();
        QCOMPARE(info.id, runId);
        QCOMPARE(info.name, QStringLiteral("first"));
        QCOMPARE(info.regime, QStringLiteral("zero_shot"));
        QCOMPARE(info.status, RunStatus::Finished);
        QVERIFY(info.created.isValid());
        QCOMPARE(info.created.timeSpec(), Qt::UTC);
        QVERIFY(qAbs(info.created.secsTo(QDateTime::currentDateTimeUtc())) < 60);
        // The whole configuration, each template with the SHA-256 of its text (FIPS 180-2's "abc").
        QCOMPARE(info.configJson, config.toJson());
        QCOMPARE(
            info.configJson[QLatin1String("templates")][QLatin1String("zero_shot")][QLatin1String("sha256")].toString(),
            QStringLiteral("ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
        QCOMPARE(info.configJson[QLatin1String("tasks")].toArray().size(), 2);
        QCOMPARE(info.gpu.name, QStringLiteral("NVIDIA H200")); // decoded when read
        const RunConfig& back = info.config;
        QCOMPARE(back.model, config.model);
        QCOMPARE(back.templates, config.templates);
        QCOMPARE(back.tasks, config.tasks);
        QVERIFY(back.seeds == config.seeds);
        QCOMPARE(back.gpu.raw, config.gpu.raw);
        QCOMPARE(back.versions.kwb, config.versions.kwb);

        QVERIFY(store.run(runId));
        QCOMPARE(store.run(runId)->name, QStringLiteral("first"));
        QVERIFY(!store.run(runId + 1));

        const QList<EvaluationRecord> evaluations = store.evaluations(runId);
        QCOMPARE(evaluations.size(), 1);
        const EvaluationRecord& e = evaluations.first();
        QCOMPARE(e.id, chain.evaluation);
        QCOMPARE(e.candidateId, chain.candidate);
        QCOMPARE(e.responseId, chain.response);
        QCOMPARE(e.promptId, chain.prompt);
        QCOMPARE(e.task, QStringLiteral("L2/1"));
        QCOMPARE(e.role, QStringLiteral("generator"));
        QCOMPARE(e.status, QStringLiteral("correct"));
        QVERIFY(e.speedup && *e.speedup == 1.25);
        QVERIFY(e.maxAbsDiff && *e.maxAbsDiff == 3e-6);
        QCOMPARE(e.result, evaluation(QStringLiteral("correct"), 1.25, 3e-6));
        QCOMPARE(store.integrityCheck(), QStringLiteral("ok"));
    }

    void evaluationWithoutNumbers()
    {
        RunStore store;
        QVERIFY2(store.open(dbPath()), qPrintable(store.errorString()));
        const auto runId = store.createRun(QStringLiteral("r"), QStringLiteral("agent"), QJsonObject());
        QVERIFY(runId);
        const auto chain = addChain(store, *runId, QStringLiteral("L1/1"), 0, 0, QStringLiteral("generator"));
        QVERIFY(chain);
        // A supervisor failure: no speedup, no correctness block.
        const QJsonObject timeout{{QStringLiteral("status"), QStringLiteral("timeout")},
                                  {QStringLiteral("message"), QStringLiteral("240 s")}};
        QVERIFY(store.addEvaluation(chain->candidate, timeout));
        QVERIFY(!store.addEvaluation(chain->candidate, QJsonObject{})); // no status: refused
        const auto list = store.evaluations(*runId);
        QCOMPARE(list.size(), 1);
        QVERIFY(!list.first().speedup);
        QVERIFY(!list.first().maxAbsDiff);
        QCOMPARE(list.first().status, QStringLiteral("timeout"));
        // A response that failed keeps its error; unknown numbers stay NULL.
        const auto prompt = store.addPrompt(
            {0, *runId, QStringLiteral("L1/2"), 0, 0, QStringLiteral("generator"), QStringLiteral("p"), QString()});
        QVERIFY(prompt);
        QVERIFY(
            store.addResponse({0, *prompt, QString(), std::nullopt, std::nullopt, 30000, QStringLiteral("HTTP 500")}));
    }

    void candidateBlocksAreTheWorkersEcho()
    {
        // The candidate is stored before its evaluation, with no blocks (the client parses
        // nothing); the evaluation's `candidate` echo (the recorded H200 response, its echo from
        // the worker's parser) fills them. The answer is one a naive client scan reads otherwise:
        // the blocks sit in a list item, indented, inside a ````markdown wrapper.
        RunStore store;
        QVERIFY2(store.open(dbPath()), qPrintable(store.errorString()));
        const auto runId = store.createRun(QStringLiteral("r"), QStringLiteral("zero_shot"), QJsonObject());
        QVERIFY(runId);
        const auto prompt = store.addPrompt(
            {0, *runId, QStringLiteral("L2/1"), 1, 0, QStringLiteral("generator"), QStringLiteral("p"), QString()});
        const QString answer = QStringLiteral("````markdown\n1. The kernel:\n   ```cuda\n   __global__ void k() {}\n"
                                              "   ```\n````\n");
        const auto response = store.addResponse({0, *prompt, answer, 1, 2, 3, QString()});
        CandidateRecord fresh;
        fresh.responseId = *response;
        fresh.task = QStringLiteral("L2/1");
        fresh.turn = 1;
        const auto candidateId = store.addCandidate(fresh);
        QVERIFY2(candidateId, qPrintable(store.errorString()));
        std::optional<CandidateRecord> before = store.candidate(*candidateId);
        QVERIFY(before);
        QCOMPARE(before->blocksFrom, CandidateBlocksFrom::None);
        QVERIFY(before->cuda.isEmpty() && before->python.isEmpty());
        QCOMPARE(before->answer, answer);

        // An evaluation without an echo (the worker never answered) says nothing about the blocks.
        QVERIFY(store.addEvaluation(*candidateId, QJsonObject{{QStringLiteral("status"), QStringLiteral("timeout")},
                                                              {QStringLiteral("message"), QStringLiteral("240 s")}}));
        QCOMPARE(store.candidate(*candidateId)->blocksFrom, CandidateBlocksFrom::None);
        QVERIFY(store.candidate(*candidateId)->cuda.isEmpty());

        QFile file(QStringLiteral(KWB_PROTOCOL_RECORDED_DIR "/evaluate_correct.h200.response.json"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QJsonObject recorded = QJsonDocument::fromJson(file.readAll()).object();
        const QJsonObject echo = recorded.value(QLatin1String("candidate")).toObject();
        QVERIFY(!echo.value(QLatin1String("cuda")).toString().isEmpty());
        QVERIFY(store.addEvaluation(*candidateId, recorded));
        const std::optional<CandidateRecord> after = store.candidate(*candidateId);
        QVERIFY(after);
        QCOMPARE(after->blocksFrom, CandidateBlocksFrom::Worker);
        QCOMPARE(after->cuda, echo.value(QLatin1String("cuda")).toString());
        QCOMPARE(after->python, echo.value(QLatin1String("python")).toString());
        QCOMPARE(after->kernels, QStringList{QStringLiteral("relu_bias_add")});
        QCOMPARE(after->sourceHash, echo.value(QLatin1String("source_hash")).toString());
        QCOMPARE(after->cudaLine, echo.value(QLatin1String("cuda_line")).toInt());
        QCOMPARE(after->pythonLine, echo.value(QLatin1String("python_line")).toInt());
        QVERIFY(after->parsedOk);
        QVERIFY(!after->cuda.contains(QLatin1String("__global__ void k()"))); // not read out of the answer

        // A format_error's echo: what the parser had found when it stopped, and not parsed.
        const auto second = store.addCandidate(fresh);
        QVERIFY(store.addEvaluation(
            *second, QJsonObject{{QStringLiteral("status"), QStringLiteral("format_error")},
                                 {QStringLiteral("format_error"),
                                  QJsonObject{{QStringLiteral("code"), QStringLiteral("no_python_block")}}},
                                 {QStringLiteral("candidate"),
                                  QJsonObject{{QStringLiteral("cuda"), QStringLiteral("__global__ void k() {}\n")},
                                              {QStringLiteral("python"), QJsonValue::Null},
                                              {QStringLiteral("kernels"), QJsonArray{QStringLiteral("k")}},
                                              {QStringLiteral("source_hash"), QStringLiteral("0123")},
                                              {QStringLiteral("cuda_line"), 4},
                                              {QStringLiteral("python_line"), QJsonValue::Null}}}}));
        const std::optional<CandidateRecord> broken = store.candidate(*second);
        QCOMPARE(broken->blocksFrom, CandidateBlocksFrom::Worker);
        QVERIFY(!broken->parsedOk);
        QCOMPARE(broken->cuda, QStringLiteral("__global__ void k() {}\n"));
        QVERIFY(broken->python.isEmpty());
        QCOMPARE(broken->cudaLine, 4);
        QCOMPARE(broken->pythonLine, 0);
    }

    // A reused verdict stores its origin's SASS, PTX and candidate echo once (session 28: 49 of a
    // 12-run study's 148 MB were such copies); every read gives the whole result back.
    void reusedVerdictSharesItsBulkWithTheOrigin()
    {
        RunStore store;
        QVERIFY2(store.open(dbPath()), qPrintable(store.errorString()));
        const auto runId = store.createRun(QStringLiteral("r"), QStringLiteral("zero_shot"), QJsonObject());
        QVERIFY(runId);
        const auto origin = addChain(store, *runId, QStringLiteral("L2/1"), 1, 0, QStringLiteral("generator"));
        const auto copy = addChain(store, *runId, QStringLiteral("L2/1"), 1, 1, QStringLiteral("generator"));
        const auto other = addChain(store, *runId, QStringLiteral("L2/1"), 1, 2, QStringLiteral("generator"));
        QVERIFY(origin && copy && other);
        QFile file(QStringLiteral(KWB_PROTOCOL_RECORDED_DIR "/evaluate_correct.h200.response.json"));
        QVERIFY(file.open(QIODevice::ReadOnly));
        QJsonObject full = QJsonDocument::fromJson(file.readAll()).object();
        const QString sass = QStringLiteral("LDG.E R2, desc[UR6][R2.64] ;\n").repeated(400);
        QJsonObject compile = full.value(QLatin1String("compile")).toObject();
        compile.insert(QStringLiteral("kernel_facts"),
                       QJsonArray{QJsonObject{{QStringLiteral("name"), QStringLiteral("relu_bias_add")},
                                              {QStringLiteral("registers"), 16},
                                              {QStringLiteral("sass"), sass}}});
        full.insert(QStringLiteral("compile"), compile);
        const auto originEval = store.addEvaluation(origin->candidate, full);
        QVERIFY2(originEval, qPrintable(store.errorString()));

        QJsonObject reused = full;
        reused.insert(QStringLiteral("reused_from_candidate"), double(origin->candidate));
        const auto copyEval = store.addEvaluation(copy->candidate, reused);
        QVERIFY2(copyEval, qPrintable(store.errorString()));
        // A copy whose facts differ from its origin's keeps its own.
        QJsonObject differs = reused;
        QJsonObject otherCompile = compile;
        otherCompile.insert(QStringLiteral("kernel_facts"), QJsonArray{QJsonObject{{QStringLiteral("registers"), 8}}});
        differs.insert(QStringLiteral("compile"), otherCompile);
        const auto otherEval = store.addEvaluation(other->candidate, differs);
        QVERIFY(otherEval);

        // What is on disk, through a connection of the test's own.
        QSqlDatabase raw = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("raw-shared"));
        raw.setDatabaseName(dbPath());
        QVERIFY(raw.open());
        const auto storedText = [&](qint64 id) {
            QSqlQuery query(raw);
            query.prepare(QStringLiteral("SELECT result FROM evaluations WHERE id = ?"));
            query.addBindValue(id);
            return query.exec() && query.next() ? query.value(0).toString() : QString();
        };
        const QString copyText = storedText(*copyEval);
        const QJsonObject copyStored = QJsonDocument::fromJson(copyText.toUtf8()).object();
        QVERIFY2(!copyText.contains(QStringLiteral("LDG.E")), qPrintable(copyText.left(300)));
        QVERIFY(!copyStored.contains(QStringLiteral("candidate")));
        QVERIFY(!copyStored.value(QStringLiteral("compile")).toObject().contains(QStringLiteral("kernel_facts")));
        QCOMPARE(copyStored.value(QStringLiteral("shared_parts_of_evaluation")).toObject(),
                 (QJsonObject{{QStringLiteral("evaluation"), double(*originEval)},
                              {QStringLiteral("parts"),
                               QJsonArray{QStringLiteral("compile.kernel_facts"), QStringLiteral("candidate")}}}));
        QVERIFY(copyText.size() * 4 < storedText(*originEval).size());
        const QJsonObject otherStored = QJsonDocument::fromJson(storedText(*otherEval).toUtf8()).object();
        QCOMPARE(otherStored.value(QStringLiteral("compile")).toObject().value(QStringLiteral("kernel_facts")),
                 otherCompile.value(QStringLiteral("kernel_facts")));
        QVERIFY(!otherStored.contains(QStringLiteral("candidate"))); // only the echo is shared
        QCOMPARE(otherStored.value(QStringLiteral("shared_parts_of_evaluation"))
                     .toObject()
                     .value(QStringLiteral("parts"))
                     .toArray(),
                 QJsonArray{QStringLiteral("candidate")});

        // A reference that came with a result (an answer's library can write its own response) is
        // not the store's: it lends nothing.
        QJsonObject forged = evaluation(QStringLiteral("correct"), 9.0, 0.0);
        forged.insert(QStringLiteral("shared_parts_of_evaluation"),
                      QJsonObject{{QStringLiteral("evaluation"), double(*originEval)},
                                  {QStringLiteral("parts"), QJsonArray{QStringLiteral("candidate")}}});
        const auto forgedChain = addChain(store, *runId, QStringLiteral("L2/1"), 1, 3, QStringLiteral("generator"));
        QVERIFY(forgedChain);
        const auto forgedEval = store.addEvaluation(forgedChain->candidate, forged);
        QVERIFY(forgedEval);
        QVERIFY(!storedText(*forgedEval).contains(QStringLiteral("shared_parts_of_evaluation")));
        QVERIFY(!store.evaluation(*forgedEval)->decoded->candidate);

        // Every read gives the whole result back, decoded.
        const std::optional<EvaluationRecord> one = store.evaluation(*copyEval);
        QVERIFY(one);
        QCOMPARE(one->result, reused);
        QVERIFY(one->decoded && one->decoded->compile && one->decoded->compile->kernelFacts.size() == 1);
        QCOMPARE(one->decoded->compile->kernelFacts.first().sass, sass);
        QVERIFY(one->decoded->candidate);
        const QList<EvaluationRecord> all = store.evaluations(*runId);
        QCOMPARE(all.size(), 4);
        QCOMPARE(all.at(0).result, full);
        QCOMPARE(all.at(1).result, reused);
        QCOMPARE(all.at(2).result, differs);

        // An origin deleted by hand: the copy reads without the parts, and says where they were.
        {
            QSqlQuery drop(raw);
            QVERIFY(drop.exec(QStringLiteral("DELETE FROM evaluations WHERE id = %1").arg(*originEval)));
        }
        raw.close();
        raw = QSqlDatabase();
        QSqlDatabase::removeDatabase(QStringLiteral("raw-shared"));
        const std::optional<EvaluationRecord> orphan = store.evaluation(*copyEval);
        QVERIFY(orphan);
        QCOMPARE(orphan->decoded->statusName, QStringLiteral("correct"));
        QVERIFY(orphan->result.contains(QStringLiteral("shared_parts_of_evaluation")));
        QVERIFY(!orphan->decoded->candidate);
    }

    // A turn's n samples are sent one prompt: its text is stored once per run, task and role, and
    // every read gives each prompt its text.
    void identicalPromptsStoredOnce()
    {
        RunStore store;
        QVERIFY2(store.open(dbPath()), qPrintable(store.errorString()));
        const auto runA = store.createRun(QStringLiteral("a"), QStringLiteral("agent"), QJsonObject());
        const auto runB = store.createRun(QStringLiteral("b"), QStringLiteral("agent"), QJsonObject());
        QVERIFY(runA && runB);
        const QString task = QStringLiteral("L2/1");
        const QString big = QStringLiteral("Write a fused kernel for conv2d + ReLU + bias.\n").repeated(200);
        const QString hash = sha256Hex(QStringLiteral("template"));
        QList<qint64> ids;
        for (int sample = 0; sample < 4; ++sample)
            ids << *store.addPrompt({0, *runA, task, 1, sample, QStringLiteral("generator"), big, hash});
        ids << *store.addPrompt({0, *runA, task, 1, 0, QStringLiteral("analyzer"), big, hash}); // another role
        ids << *store.addPrompt({0, *runA, task, 2, 0, QStringLiteral("generator"), big + QStringLiteral("x"), hash});
        ids << *store.addPrompt({0, *runB, task, 1, 0, QStringLiteral("generator"), big, hash}); // another run
        ids << *store.addPrompt({0, *runA, QStringLiteral("L1/1"), 1, 0, QStringLiteral("generator"), big, hash});

        QSqlDatabase raw = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("raw-prompts"));
        raw.setDatabaseName(dbPath());
        QVERIFY(raw.open());
        {
            QSqlQuery query(raw);
            QVERIFY(query.exec(QStringLiteral("SELECT id, length(text), text_of FROM prompts ORDER BY id")));
            QList<QPair<int, QVariant>> rows;
            while (query.next())
                rows.append({query.value(1).toInt(), query.value(2)});
            QCOMPARE(rows.size(), 8);
            QCOMPARE(rows.at(0).first, big.size());
            QVERIFY(rows.at(0).second.isNull());
            for (int i = 1; i < 4; ++i) {
                QCOMPARE(rows.at(i).first, 0);
                QCOMPARE(rows.at(i).second.toLongLong(), ids.at(0));
            }
            for (int i = 4; i < 8; ++i) { // another role, another text, another run, another task
                QCOMPARE(rows.at(i).first, i == 5 ? big.size() + 1 : big.size());
                QVERIFY(rows.at(i).second.isNull());
            }
        }
        raw.close();
        raw = QSqlDatabase();
        QSqlDatabase::removeDatabase(QStringLiteral("raw-prompts"));

        const QList<PromptRecord> prompts = store.prompts(*runA, task);
        QCOMPARE(prompts.size(), 6);
        for (const PromptRecord& p : prompts)
            QCOMPARE(p.text, p.turn == 2 ? big + QStringLiteral("x") : big);
        QCOMPARE(prompts.at(2).sample, 2);
        QCOMPARE(store.prompts(*runB, task).value(0).text, big);
    }

    void candidatesOfTaskOverRuns()
    {
        // The Diff page's query: every evaluated candidate of one task over all runs, by run, turn
        // and sample, with what its pickers and default pair need, and nothing of another task.
        RunStore store;
        QVERIFY2(store.open(dbPath()), qPrintable(store.errorString()));
        const auto first = store.createRun(QStringLiteral("a"), QStringLiteral("zero_shot"), QJsonObject());
        const auto second = store.createRun(QStringLiteral("b"), QStringLiteral("agent"), QJsonObject());
        const auto third = store.createRun(QStringLiteral("c"), QStringLiteral("agent"), QJsonObject());
        QVERIFY(first && second && third);
        const QString task = QStringLiteral("L2/1"), other = QStringLiteral("L2/2");
        // Written out of order: the second run first, a later turn before an earlier one.
        const auto b2 = addChain(store, *second, task, 2, 0, QStringLiteral("generator"));
        const auto b1 = addChain(store, *second, task, 1, 1, QStringLiteral("generator"), QStringLiteral("incorrect"));
        const auto bOther =
            addChain(store, *second, other, 1, 0, QStringLiteral("generator"), QStringLiteral("correct"));
        const auto a1 =
            addChain(store, *first, task, 1, 0, QStringLiteral("zero_shot"), QStringLiteral("compile_error"));
        const auto aOther =
            addChain(store, *first, other, 1, 0, QStringLiteral("zero_shot"), QStringLiteral("correct"));
        const auto unevaluated = addChain(store, *third, task, 1, 0, QStringLiteral("generator")); // never evaluated
        QVERIFY(b2 && b1 && bOther && a1 && aOther && unevaluated);
        // b2: correct but below the roofline floor, its blocks echoed by the worker with a hash.
        const QJsonObject echo{{QStringLiteral("cuda"), QStringLiteral("__global__ void k() {}")},
                               {QStringLiteral("python"), QStringLiteral("def forward(x): ...")},
                               {QStringLiteral("kernels"), QJsonArray{QStringLiteral("k")}},
                               {QStringLiteral("source_hash"), QStringLiteral("abc123")}};
        QJsonObject floor = evaluation(QStringLiteral("correct"), 40.0, 1e-6);
        floor.insert(QStringLiteral("flags"), QJsonArray{QStringLiteral("below_roofline_floor")});
        floor.insert(QStringLiteral("candidate"), echo);
        floor.insert(QStringLiteral("compile"), QJsonObject{{QStringLiteral("ok"), true},
                                                            {QStringLiteral("log"), QString(5000, QLatin1Char('x'))}});
        floor.insert(QStringLiteral("timing"),
                     QJsonObject{{QStringLiteral("speedup_interval"), QJsonObject{{QStringLiteral("low"), 39.5},
                                                                                  {QStringLiteral("high"), 40.5},
                                                                                  {QStringLiteral("samples"), 12}}},
                                 {QStringLiteral("candidate"), QJsonObject{{QStringLiteral("mean_ms"), 0.01}}}});
        const auto floorId = store.addEvaluation(b2->candidate, floor);
        // Then evaluated again: a timeout after compiling, its echo without a hash.
        QJsonObject noHash = echo;
        noHash.remove(QStringLiteral("source_hash"));
        const auto timeoutId = store.addEvaluation(
            b2->candidate, QJsonObject{{QStringLiteral("status"), QStringLiteral("timeout")},
                                       {QStringLiteral("compile"), QJsonObject{{QStringLiteral("ok"), true}}},
                                       {QStringLiteral("candidate"), noHash}});
        QVERIFY(floorId && timeoutId);

        const QList<TaskCandidate> rows = store.candidatesOfTask(task);
        QCOMPARE(rows.size(), 4);
        for (const TaskCandidate& row : rows)
            QCOMPARE(row.task, task);
        QCOMPARE(rows[0].runId, *first);
        QCOMPARE(rows[0].evaluationId, a1->evaluation);
        QCOMPARE(rows[0].candidateId, a1->candidate);
        QCOMPARE(rows[0].role, QStringLiteral("zero_shot"));
        QCOMPARE(rows[0].status, QStringLiteral("compile_error"));
        QVERIFY(!rows[0].outcome.compiled());
        QVERIFY(rows[0].codeKey.isEmpty()); // client blocks: nothing the worker named
        QCOMPARE(rows[1].runId, *second);
        QCOMPARE(rows[1].evaluationId, b1->evaluation);
        QCOMPARE(std::make_pair(rows[1].turn, rows[1].sample), std::make_pair(1, 1));
        QCOMPARE(rows[1].status, QStringLiteral("incorrect"));
        QCOMPARE(rows[1].speedup.value_or(0), 1.25);
        QVERIFY(rows[1].outcome.compiled() && !rows[1].outcome.countsAsCorrect());
        QCOMPARE(rows[2].evaluationId, *floorId);
        QCOMPARE(std::make_pair(rows[2].turn, rows[2].sample), std::make_pair(2, 0));
        QVERIFY(rows[2].outcome.isCorrect());
        QVERIFY(rows[2].outcome.belowRooflineFloor());
        QVERIFY(!rows[2].outcome.countsAsCorrect());
        QVERIFY(!rows[2].outcome.trustedSpeedup());
        QCOMPARE(rows[2].outcome.positiveSpeedup().value_or(0), 40.0);
        // The interval comes along (the pickers print it beside the speed-up), not the rest of timing.
        QVERIFY(rows[2].outcome.timing.interval);
        QCOMPARE(rows[2].outcome.timing.interval->low, 39.5);
        QCOMPARE(rows[2].outcome.timing.interval->high, 40.5);
        QVERIFY(!rows[2].outcome.timing.candidate);
        QVERIFY(!rows[1].outcome.timing.interval);
        // The candidate's blocks are its latest echo's (the one without a hash): named by the blocks.
        QCOMPARE(rows[2].codeKey,
                 QStringLiteral("__global__ void k() {}") + QLatin1Char('\0') + QStringLiteral("def forward(x): ..."));
        QCOMPARE(rows[3].evaluationId, *timeoutId);
        QCOMPARE(rows[3].status, QStringLiteral("timeout"));
        QVERIFY(rows[3].outcome.compiled()); // compile.ok of a timeout
        QVERIFY(!rows[3].speedup);

        const QList<TaskCandidate> others = store.candidatesOfTask(other);
        QCOMPARE(others.size(), 2);
        QCOMPARE(others[0].evaluationId, aOther->evaluation);
        QCOMPARE(others[1].evaluationId, bOther->evaluation);
        QVERIFY(store.candidatesOfTask(QStringLiteral("L3/1")).isEmpty());

        // One evaluation in full, as the run's list has it.
        const std::optional<EvaluationRecord> full = store.evaluation(*floorId);
        QVERIFY(full);
        const QList<EvaluationRecord> ofRun = store.evaluations(*second);
        const auto listed =
            std::find_if(ofRun.cbegin(), ofRun.cend(), [&](const EvaluationRecord& e) { return e.id == *floorId; });
        QVERIFY(listed != ofRun.cend());
        QCOMPARE(full->result, listed->result);
        QCOMPARE(full->candidateId, b2->candidate);
        QCOMPARE(full->promptId, b2->prompt);
        QCOMPARE(full->task, task);
        QCOMPARE(full->turn, 2);
        QVERIFY(!store.evaluation(*timeoutId + 100));
    }

    void candidatesOfATaskByIndex()
    {
        // candidatesOfTask's filter on candidates.task is answered by an index (schema 6), not a
        // scan of every run's candidates: SQLite's own plan for that filter says so.
        const QString path = dbPath();
        {
            RunStore store;
            QVERIFY2(store.open(path), qPrintable(store.errorString()));
            QVERIFY(RunStore::schemaVersion() >= 6);
        }
        const QString name = QStringLiteral("tst-runstore-plan");
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), name);
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery query(db);
            QVERIFY(query.exec(QStringLiteral("EXPLAIN QUERY PLAN SELECT c.id FROM candidates c"
                                              " JOIN evaluations e ON e.candidate_id = c.id WHERE c.task = 'L2/1'")));
            QString plan;
            while (query.next())
                plan += query.value(3).toString() + QLatin1Char('\n');
            QVERIFY2(plan.contains(QLatin1String("candidates_task")), qPrintable(plan));
            db.close();
        }
        QSqlDatabase::removeDatabase(name);
    }

    // Issue 16: an evaluation records where it ran (the queue's "worker"); rows of a schema-3 file
    // keep working, with no place recorded.
    void evaluationsRecordWhereTheyRan()
    {
        const QString path = dbPath();
        QList<RunStore::Migration> upToThree = RunStore::migrations();
        while (!upToThree.isEmpty() && upToThree.constLast().version > 3)
            upToThree.removeLast();
        QCOMPARE(upToThree.constLast().version, 3);
        upToThree.last().statements
            << QStringLiteral("INSERT INTO runs (id, name, created, regime, config) VALUES (1, 'old', "
                              "'2026-11-30T00:00:00.000Z', 'zero_shot', '{}')")
            << QStringLiteral("INSERT INTO prompts (id, run_id, task, turn, sample, role, text, created) VALUES (1, 1, "
                              "'L2/1', 1, 0, 'generator', 'p', '2026-11-30T00:00:00.000Z')")
            << QStringLiteral("INSERT INTO responses (id, prompt_id, text, created) VALUES (1, 1, 'the answer', "
                              "'2026-11-30T00:00:00.000Z')")
            << QStringLiteral("INSERT INTO candidates (id, response_id, task, turn, sample, cuda, python, parsed_ok, "
                              "created) VALUES (1, 1, 'L2/1', 1, 0, 'c', 'p', 1, '2026-11-30T00:00:00.000Z')")
            << QStringLiteral("INSERT INTO evaluations (id, candidate_id, status, result, created) VALUES (1, 1, "
                              "'correct', '{\"status\":\"correct\"}', '2026-11-30T00:00:00.000Z')");
        {
            RunStore store;
            QVERIFY2(store.open(path, upToThree), qPrintable(store.errorString()));
        }
        RunStore store;
        QVERIFY2(store.open(path), qPrintable(store.errorString()));
        QCOMPARE(store.fileSchemaVersion(), RunStore::schemaVersion());
        QJsonObject remote = evaluation(QStringLiteral("correct"), 1.5, 0.0);
        remote.insert(QStringLiteral("worker"), QStringLiteral("gpu-box:1"));
        QVERIFY2(store.addEvaluation(1, remote), qPrintable(store.errorString()));
        const QList<EvaluationRecord> evaluations = store.evaluations(1);
        QCOMPARE(evaluations.size(), 2);
        QCOMPARE(evaluations.at(0).worker, QString());
        QCOMPARE(evaluations.at(0).status, QStringLiteral("correct"));
        QCOMPARE(evaluations.at(1).worker, QStringLiteral("gpu-box:1"));
    }

    void measuredTrafficKeptWithTheEvaluation()
    {
        // Issue 15: a schema-4 file (before dram_bytes) opens, migrates and keeps its rows (NULL:
        // not profiled), including a result that already carries a profile (backfilled); new
        // evaluations keep the profile's bytes; one not profiled, or whose profile failed, keeps none.
        const QString path = dbPath();
        QList<RunStore::Migration> upToFour = RunStore::migrations();
        while (!upToFour.isEmpty() && upToFour.constLast().version > 4)
            upToFour.removeLast();
        QCOMPARE(upToFour.constLast().version, 4);
        upToFour.last().statements
            << QStringLiteral("INSERT INTO runs (id, name, created, regime, config) VALUES (1, 'old', "
                              "'2026-11-30T00:00:00.000Z', 'zero_shot', '{}')")
            << QStringLiteral("INSERT INTO prompts (id, run_id, task, turn, sample, role, text, created) VALUES (1, 1, "
                              "'L1/5', 1, 0, 'generator', 'p', '2026-11-30T00:00:00.000Z')")
            << QStringLiteral("INSERT INTO responses (id, prompt_id, text, created) VALUES (1, 1, 'the answer', "
                              "'2026-11-30T00:00:00.000Z')")
            << QStringLiteral("INSERT INTO candidates (id, response_id, task, turn, sample, cuda, python, parsed_ok, "
                              "created) VALUES (1, 1, 'L1/5', 1, 0, 'c', 'p', 1, '2026-11-30T00:00:00.000Z')")
            << QStringLiteral("INSERT INTO evaluations (id, candidate_id, status, result, created) VALUES (1, 1, "
                              "'correct', '{\"status\":\"correct\"}', '2026-11-30T00:00:00.000Z')")
            << QStringLiteral(
                   "INSERT INTO evaluations (id, candidate_id, status, result, created) VALUES (2, 1, 'correct', "
                   "'{\"status\":\"correct\",\"traffic\":{\"profiled\":true,\"dram_bytes\":8.6e9}}', "
                   "'2026-11-30T00:00:00.000Z')")
            << QStringLiteral("INSERT INTO evaluations (id, candidate_id, status, result, created) VALUES (3, 1, "
                              "'correct', 'not json', '2026-11-30T00:00:00.000Z')");
        {
            RunStore store;
            QVERIFY2(store.open(path, upToFour), qPrintable(store.errorString()));
        }
        RunStore store;
        QVERIFY2(store.open(path), qPrintable(store.errorString()));
        QCOMPARE(store.fileSchemaVersion(), RunStore::schemaVersion());
        QVERIFY(RunStore::schemaVersion() >= 5);

        QJsonObject profiled = evaluation(QStringLiteral("correct"), 1.0, 0.0);
        profiled.insert(QLatin1String(kTrafficKey), QJsonObject{{QStringLiteral("profiled"), true},
                                                                {QStringLiteral("dram_bytes"), 8589934592.0},
                                                                {QStringLiteral("dram_read_bytes"), 4294967296.0},
                                                                {QStringLiteral("dram_write_bytes"), 4294967296.0},
                                                                {QStringLiteral("kernels"), 1}});
        QJsonObject failed = evaluation(QStringLiteral("correct"), 1.0, 0.0);
        failed.insert(QLatin1String(kTrafficKey),
                      QJsonObject{{QStringLiteral("profiled"), false},
                                  {QStringLiteral("reason"),
                                   QStringLiteral("cuptiRangeProfilerEnable: CUPTI_ERROR_INSUFFICIENT_PRIVILEGES")}});
        QVERIFY2(store.addEvaluation(1, profiled), qPrintable(store.errorString()));
        QVERIFY2(store.addEvaluation(1, failed), qPrintable(store.errorString()));
        QVERIFY2(store.addEvaluation(1, evaluation(QStringLiteral("correct"), 1.0, 0.0)),
                 qPrintable(store.errorString()));

        const QList<EvaluationRecord> e = store.evaluations(1);
        QCOMPARE(e.size(), 6);
        QVERIFY(!e.at(0).dramBytes);                    // old row, no profile
        QCOMPARE(e.at(1).dramBytes.value_or(0), 8.6e9); // old row whose result had one: backfilled
        QVERIFY(!e.at(2).dramBytes);                    // old row that is not JSON: left alone
        QCOMPARE(e.at(3).dramBytes.value_or(0), 8589934592.0);
        QCOMPARE(e.at(3).evaluation().measuredDramBytes().value_or(0), 8589934592.0);
        QVERIFY(!e.at(4).dramBytes);
        QVERIFY(e.at(4).evaluation().traffic);
        QVERIFY(e.at(4).evaluation().traffic->reason.contains(QLatin1String("INSUFFICIENT_PRIVILEGES")));
        QCOMPARE(e.at(4).status, QStringLiteral("correct")); // a failed profile is no candidate error
        QVERIFY(!e.at(5).dramBytes);
        QVERIFY(!e.at(5).evaluation().traffic);
        QCOMPARE(store.integrityCheck(), QStringLiteral("ok"));
    }

    void recordedVerdictsBesideOurs()
    {
        // Issue 33: a schema-6 file (before recorded_verdicts) opens and migrates; a third party's
        // verdict is kept per candidate, beside the evaluations, and listed per run.
        const QString path = dbPath();
        QList<RunStore::Migration> upToSix = RunStore::migrations();
        while (!upToSix.isEmpty() && upToSix.constLast().version > 6)
            upToSix.removeLast();
        QCOMPARE(upToSix.constLast().version, 6);
        upToSix.last().statements
            << QStringLiteral("INSERT INTO runs (id, name, created, regime, config) VALUES (1, 'old', "
                              "'2026-11-30T00:00:00.000Z', 'import', '{}')")
            << QStringLiteral("INSERT INTO prompts (id, run_id, task, turn, sample, role, text, created) VALUES (1, 1, "
                              "'L1/1', 1, 3, 'generator', 'p', '2026-11-30T00:00:00.000Z')")
            << QStringLiteral("INSERT INTO responses (id, prompt_id, text, created) VALUES (1, 1, 'the answer', "
                              "'2026-11-30T00:00:00.000Z')")
            << QStringLiteral("INSERT INTO candidates (id, response_id, task, turn, sample, cuda, python, parsed_ok, "
                              "created) VALUES (1, 1, 'L1/1', 1, 3, '', '', 0, '2026-11-30T00:00:00.000Z')");
        {
            RunStore store;
            QVERIFY2(store.open(path, upToSix), qPrintable(store.errorString()));
            QCOMPARE(store.fileSchemaVersion(), 6);
        }
        RunStore store;
        QVERIFY2(store.open(path), qPrintable(store.errorString()));
        QCOMPARE(store.fileSchemaVersion(), RunStore::schemaVersion());
        QVERIFY(RunStore::schemaVersion() >= 7);
        QVERIFY(store.recordedVerdicts(1).isEmpty()); // rows written before have none

        const QJsonObject verdict{{QStringLiteral("source"), QStringLiteral("runs/x/eval_results.json")},
                                  {QStringLiteral("compiled"), true},
                                  {QStringLiteral("correct"), false},
                                  {QStringLiteral("hardware"), QStringLiteral("NVIDIA RTX A6000")},
                                  {QStringLiteral("recorded"), QJsonObject{{QStringLiteral("correctness"), false}}}};
        QVERIFY2(store.addRecordedVerdict(1, QStringLiteral("runs/x/eval_results.json"),
                                          QStringLiteral("NVIDIA RTX A6000"), verdict),
                 qPrintable(store.errorString()));
        QVERIFY2(store.addEvaluation(1, evaluation(QStringLiteral("correct"), 1.5, 0.0)),
                 qPrintable(store.errorString()));
        const QList<RecordedVerdictRecord> rows = store.recordedVerdicts(1);
        QCOMPARE(rows.size(), 1);
        QCOMPARE(rows.first().candidateId, qint64(1));
        QCOMPARE(rows.first().task, QStringLiteral("L1/1"));
        QCOMPARE(rows.first().sample, 3);
        QCOMPARE(rows.first().source, QStringLiteral("runs/x/eval_results.json"));
        QCOMPARE(rows.first().hardware, QStringLiteral("NVIDIA RTX A6000"));
        QCOMPARE(rows.first().verdict, verdict);
        QCOMPARE(store.evaluations(1).size(), 1);                                        // ours stays ours
        QVERIFY(!store.addRecordedVerdict(99, QStringLiteral("x"), QString(), verdict)); // no such candidate
        QVERIFY(store.recordedVerdicts(2).isEmpty());
    }

    void schemaOneFileKeepsItsBlocks()
    {
        // A file written before the echo (schema 1) holds blocks a client parsed: migrating keeps
        // them, marked as the client's.
        const QString path = dbPath();
        RunStore::Migration one = RunStore::migrations().first();
        QCOMPARE(one.version, 1);
        one.statements
            << QStringLiteral("INSERT INTO runs (id, name, created, regime, config) VALUES (1, 'old', "
                              "'2026-11-30T00:00:00.000Z', 'zero_shot', '{}')")
            << QStringLiteral("INSERT INTO prompts (id, run_id, task, turn, sample, role, text, created) VALUES (1, 1, "
                              "'L2/1', 1, 0, 'generator', 'p', '2026-11-30T00:00:00.000Z')")
            << QStringLiteral("INSERT INTO responses (id, prompt_id, text, created) VALUES (1, 1, 'the answer', "
                              "'2026-11-30T00:00:00.000Z')")
            << QStringLiteral(
                   "INSERT INTO candidates (id, response_id, task, turn, sample, cuda, python, parsed_ok, created) "
                   "VALUES (1, 1, 'L2/1', 1, 0, 'old cuda', 'old python', 1, '2026-11-30T00:00:00.000Z')");
        {
            RunStore store;
            QVERIFY2(store.open(path, {one}), qPrintable(store.errorString()));
            QCOMPARE(store.fileSchemaVersion(), 1);
        }
        RunStore store;
        QVERIFY2(store.open(path), qPrintable(store.errorString()));
        QCOMPARE(store.fileSchemaVersion(), RunStore::schemaVersion());
        const std::optional<CandidateRecord> c = store.candidate(1);
        QVERIFY(c);
        QCOMPARE(c->blocksFrom, CandidateBlocksFrom::Client);
        QCOMPARE(c->cuda, QStringLiteral("old cuda"));
        QCOMPARE(c->python, QStringLiteral("old python"));
        QVERIFY(c->parsedOk);
        QVERIFY(c->kernels.isEmpty());
        QVERIFY(c->sourceHash.isEmpty());
        QCOMPARE(c->answer, QStringLiteral("the answer"));
        QCOMPARE(store.integrityCheck(), QStringLiteral("ok"));
    }

    void twoStoresAtOnce()
    {
        RunStore a, b;
        QVERIFY(a.open(dbPath(QStringLiteral("a"))));
        QVERIFY(b.open(dbPath(QStringLiteral("b"))));
        QVERIFY(a.createRun(QStringLiteral("in a"), QStringLiteral("x"), QJsonObject()));
        QCOMPARE(a.runs().size(), 1);
        QCOMPARE(b.runs().size(), 0);
        // The same file through two connections (two processes would be the same).
        RunStore c;
        QVERIFY(c.open(dbPath(QStringLiteral("a"))));
        QCOMPARE(c.runs().size(), 1);
        QVERIFY(c.createRun(QStringLiteral("in a too"), QStringLiteral("x"), QJsonObject()));
        QCOMPARE(a.runs().size(), 2);
    }

    void migrations()
    {
        const QString path = dbPath();
        const QList<RunStore::Migration> current = RunStore::migrations();
        QList<RunStore::Migration> next = current;
        next.append({RunStore::schemaVersion() + 1,
                     {QStringLiteral("ALTER TABLE runs ADD COLUMN note TEXT NOT NULL DEFAULT ''"),
                      QStringLiteral("CREATE INDEX runs_note ON runs(note)")}});
        {
            RunStore store;
            QVERIFY(store.open(path));
            QVERIFY(store.createRun(QStringLiteral("kept"), QStringLiteral("guided"), QJsonObject()));
        }
        {
            // The newer build migrates the file and keeps the data.
            RunStore store;
            QVERIFY2(store.open(path, next), qPrintable(store.errorString()));
            QCOMPARE(store.fileSchemaVersion(), RunStore::schemaVersion() + 1);
            QCOMPARE(store.runs().size(), 1);
            QCOMPARE(store.runs().first().name, QStringLiteral("kept"));
        }
        {
            // A broken migration is rolled back whole: the file stays at its version, the first
            // statement's column does not appear, and the error names the step.
            QList<RunStore::Migration> broken = next;
            broken.append(
                {RunStore::schemaVersion() + 2,
                 {QStringLiteral("ALTER TABLE runs ADD COLUMN half TEXT"), QStringLiteral("THIS IS NOT SQL")}});
            RunStore store;
            QVERIFY(!store.open(path, broken));
            QVERIFY(!store.isOpen());
            QVERIFY2(store.errorString().contains(QStringLiteral("schema %1").arg(RunStore::schemaVersion() + 2)),
                     qPrintable(store.errorString()));
        }
        {
            RunStore store;
            QVERIFY(store.open(path, next));
            QCOMPARE(store.fileSchemaVersion(), RunStore::schemaVersion() + 1);
            QCOMPARE(store.integrityCheck(), QStringLiteral("ok"));
        }
    }

    void oldKernelbenchProfileReadsAsFp32()
    {
        // A store written at schema 1, when `kernelbench` had TF32 off: after the migration its
        // run and its result name `kernelbench-fp32`; another profile's name is left alone.
        const QString path = dbPath();
        const qint64 runId = 1, otherRunId = 2;
        {
            // Rows as a schema-1 store wrote them (today's add* functions fill later columns).
            RunStore::Migration one = RunStore::migrations().first();
            one.statements
                << QStringLiteral("INSERT INTO runs (id, name, created, regime, config) VALUES (1, 'old', "
                                  "'2026-11-30T00:00:00.000Z', 'zero_shot', '{\"protocol_profile\":\"kernelbench\"}')")
                << QStringLiteral(
                       "INSERT INTO runs (id, name, created, regime, config) VALUES (2, 'v01', "
                       "'2026-11-30T00:00:00.000Z', 'zero_shot', '{\"protocol_profile\":\"kernelbench-v0.1\"}')")
                << QStringLiteral("INSERT INTO prompts (id, run_id, task, turn, sample, role, text, created) VALUES "
                                  "(1, 1, 'L1/1', 1, 0, 'generator', 'p', '2026-11-30T00:00:00.000Z')")
                << QStringLiteral("INSERT INTO responses (id, prompt_id, text, created) VALUES (1, 1, 'the answer', "
                                  "'2026-11-30T00:00:00.000Z')")
                << QStringLiteral(
                       "INSERT INTO candidates (id, response_id, task, turn, sample, cuda, python, parsed_ok, created) "
                       "VALUES (1, 1, 'L1/1', 1, 0, '', '', 1, '2026-11-30T00:00:00.000Z')")
                << QStringLiteral("INSERT INTO evaluations (candidate_id, status, speedup, max_abs_diff, result, "
                                  "created) VALUES (1, 'correct', NULL, NULL, "
                                  "'{\"status\":\"correct\",\"profile\":{\"name\":\"kernelbench\",\"tf32\":false}}', "
                                  "'2026-11-30T00:00:00.000Z')");
            RunStore store;
            QVERIFY2(store.open(path, {one}), qPrintable(store.errorString()));
            QCOMPARE(store.fileSchemaVersion(), 1);
        }
        RunStore store;
        QVERIFY2(store.open(path), qPrintable(store.errorString()));
        QCOMPARE(store.fileSchemaVersion(), RunStore::schemaVersion());
        QCOMPARE(store.run(runId)->configJson.value(QLatin1String("protocol_profile")).toString(),
                 QStringLiteral("kernelbench-fp32"));
        QCOMPARE(store.run(runId)->config.protocolProfile, QStringLiteral("kernelbench-fp32"));
        QCOMPARE(store.run(otherRunId)->configJson.value(QLatin1String("protocol_profile")).toString(),
                 QStringLiteral("kernelbench-v0.1"));
        const QList<EvaluationRecord> evaluations = store.evaluations(runId);
        QCOMPARE(evaluations.size(), 1);
        QCOMPARE(evaluations.first().evaluation().profile->name, QStringLiteral("kernelbench-fp32"));
        QCOMPARE(evaluations.first().evaluation().profile->tf32, std::optional<bool>(false));
    }

    void newerVersionRefused()
    {
        const QString path = dbPath();
        QList<RunStore::Migration> future = RunStore::migrations();
        future.append({RunStore::schemaVersion() + 1, {QStringLiteral("CREATE TABLE later (id INTEGER)")}});
        {
            RunStore store;
            QVERIFY(store.open(path, future));
        }
        RunStore store;
        QVERIFY(!store.open(path));
        QVERIFY(!store.isOpen());
        QVERIFY2(store.errorString().contains(QLatin1String("newer")), qPrintable(store.errorString()));
        QVERIFY(store.errorString().contains(QString::number(RunStore::schemaVersion() + 1)));
        // The file is left as it was.
        QVERIFY(store.open(path, future));
        QCOMPARE(store.fileSchemaVersion(), RunStore::schemaVersion() + 1);
    }

    void foreignDatabaseLeftUnchanged_data()
    {
        QTest::addColumn<bool>("wal");
        QTest::newRow("rollback journal") << false;
        QTest::newRow("WAL") << true;
    }

    void foreignDatabaseLeftUnchanged()
    {
        QFETCH(bool, wal);
        const QString path = dbPath(wal ? QStringLiteral("foreign-wal") : QStringLiteral("foreign"));
        QVERIFY(kwb::test::writeForeignDatabase(path, wal));
        const auto before = kwb::test::FileSnapshot::of(path);
        const StoreFile file = RunStore::inspect(path);
        QCOMPARE(file.kind, StoreFile::Kind::Foreign);
        QCOMPARE(file.tables, QStringList{QStringLiteral("foo")});
        for (const OpenOptions::Access access :
             {OpenOptions::Access::Auto, OpenOptions::Access::Write, OpenOptions::Access::Read}) {
            RunStore store;
            QVERIFY(!store.open(path, OpenOptions{access, true})); // initEmpty: it is not empty
            QVERIFY(!store.isOpen());
            QVERIFY2(store.errorString().contains(QLatin1String("another program")) &&
                         store.errorString().contains(QLatin1String("tables: foo")) &&
                         store.errorString().contains(QLatin1String("not a run store")) &&
                         store.errorString().contains(QLatin1String("unchanged")),
                     qPrintable(store.errorString()));
            QCOMPARE(store.file().kind, StoreFile::Kind::Foreign);
        }
        const auto after = kwb::test::FileSnapshot::of(path);
        QVERIFY2(after == before, qPrintable(before.describe() + QStringLiteral("\n") + after.describe()));
    }

    void emptyFileMadeAStoreOnlyWhenAsked()
    {
        const QString path = dbPath();
        QVERIFY(kwb::test::writeEmptyFile(path));
        const auto before = kwb::test::FileSnapshot::of(path);
        QCOMPARE(RunStore::inspect(path).kind, StoreFile::Kind::Empty);
        for (const OpenOptions::Access access : {OpenOptions::Access::Auto, OpenOptions::Access::Write}) {
            RunStore store;
            QVERIFY(!store.open(path, OpenOptions{access, false}));
            QVERIFY2(store.errorString().contains(QLatin1String("empty file (0 bytes)")) &&
                         store.errorString().contains(QLatin1String("only when asked")),
                     qPrintable(store.errorString()));
        }
        {
            RunStore store; // asked, but only to read
            QVERIFY(!store.open(path, OpenOptions{OpenOptions::Access::Read, true}));
        }
        QVERIFY(kwb::test::FileSnapshot::of(path) == before);
        QCOMPARE(QFileInfo(path).size(), 0);
        {
            RunStore store;
            QVERIFY2(store.open(path, OpenOptions{OpenOptions::Access::Auto, true}), qPrintable(store.errorString()));
            QCOMPARE(store.fileSchemaVersion(), RunStore::schemaVersion());
            QVERIFY(store.createRun(QStringLiteral("first"), QStringLiteral("zero_shot"), QJsonObject()));
        }
        QCOMPARE(RunStore::inspect(path).kind, StoreFile::Kind::Current);
    }

    void damagedStoreSaysWhatIsMissing()
    {
        const QString path = dbPath();
        QVERIFY(kwb::test::writeStore(path));
        QCOMPARE(RunStore::inspect(path).kind, StoreFile::Kind::Current);
        QVERIFY(kwb::test::overwriteTwoPages(path));
        const auto before = kwb::test::FileSnapshot::of(path);
        const StoreFile file = RunStore::inspect(path);
        QCOMPARE(file.kind, StoreFile::Kind::Damaged);
        QVERIFY(!file.problems.isEmpty());
        // Most pages are the prompts' and answers' text: what cannot be read is named, with counts.
        QVERIFY2(!file.unreadable.isEmpty(), qPrintable(file.summary()));
        QVERIFY2(file.summary().contains(QLatin1String("rows read before the damage")), qPrintable(file.summary()));
        RunStore store;
        QVERIFY(!store.open(path));
        QVERIFY2(store.errorString().contains(QLatin1String("damaged SQLite database")) &&
                     store.errorString().contains(QLatin1String("quick check")) &&
                     store.errorString().contains(QLatin1String(".recover")),
                 qPrintable(store.errorString()));
        QVERIFY(!store.open(path, OpenOptions{OpenOptions::Access::Read, false}));
        const auto after = kwb::test::FileSnapshot::of(path);
        QVERIFY2(after == before, qPrintable(before.describe() + QStringLiteral("\n") + after.describe()));
    }

    void storeWithoutItsTablesIsDamaged()
    {
        const QString path = dbPath();
        {
            RunStore store;
            QVERIFY(store.open(path));
        }
        {
            QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), QStringLiteral("drop"));
            db.setDatabaseName(path);
            QVERIFY(db.open());
            QSqlQuery q(db);
            QVERIFY(q.exec(QStringLiteral("DROP TABLE evaluations")));
            q.finish();
            db.close();
        }
        QSqlDatabase::removeDatabase(QStringLiteral("drop"));
        const StoreFile file = RunStore::inspect(path);
        QCOMPARE(file.kind, StoreFile::Kind::Damaged);
        QCOMPARE(file.missingTables, QStringList{QStringLiteral("evaluations")});
        QVERIFY2(file.summary().contains(QLatin1String("lacks the tables evaluations")), qPrintable(file.summary()));
    }

    void readOnlyFolderOpensReadOnly()
    {
        const QString folder = m_dir.filePath(QStringLiteral("archived"));
        QVERIFY(QDir().mkpath(folder));
        const QString path = QDir(folder).filePath(QStringLiteral("study.db"));
        QVERIFY(kwb::test::writeStore(path, 3));
        const kwb::test::ReadOnlyGuard readOnly(folder);
        const auto before = kwb::test::FileSnapshot::of(path);
        {
            const StoreFile file = RunStore::inspect(path);
            QCOMPARE(file.kind, StoreFile::Kind::Current);
            QVERIFY(file.readOnly);
            QVERIFY2(file.readOnlyReason.contains(QLatin1String("folder")), qPrintable(file.readOnlyReason));
            RunStore store;
            QVERIFY2(store.open(path), qPrintable(store.errorString()));
            QVERIFY(store.isReadOnly());
            QVERIFY2(store.openNote().contains(QLatin1String("read-only")), qPrintable(store.openNote()));
            QCOMPARE(store.runs().size(), 1);
            QCOMPARE(store.evaluations(store.runs().first().id).size(), 3);
            QVERIFY(!store.createRun(QStringLiteral("no"), QStringLiteral("x"), QJsonObject()));
            RunStore writer;
            QVERIFY(!writer.open(path, OpenOptions{OpenOptions::Access::Write, false}));
            QVERIFY2(writer.errorString().contains(QLatin1String("may not be written")) &&
                         writer.errorString().contains(QLatin1String("folder")),
                     qPrintable(writer.errorString()));
            // Nothing is created in it either.
            RunStore created;
            QVERIFY(!created.open(QDir(folder).filePath(QStringLiteral("new.db"))));
            QVERIFY2(created.errorString().contains(QLatin1String("cannot create a run store")),
                     qPrintable(created.errorString()));
        }
        const auto after = kwb::test::FileSnapshot::of(path);
        QVERIFY2(after == before, qPrintable(before.describe() + QStringLiteral("\n") + after.describe()));
    }

    void readOnlyFileOpensReadOnly()
    {
        const QString path = dbPath();
        QVERIFY(kwb::test::writeStore(path, 3));
        const kwb::test::ReadOnlyGuard readOnly(path);
        const auto before = kwb::test::FileSnapshot::of(path);
        {
            RunStore store;
            QVERIFY2(store.open(path), qPrintable(store.errorString()));
            QVERIFY(store.isReadOnly());
            QCOMPARE(store.file().readOnlyReason, QStringLiteral("the file is read-only"));
            QCOMPARE(store.runs().size(), 1);
            QVERIFY(!store.addPrompt({0, store.runs().first().id, QStringLiteral("L1/1"), 1, 0,
                                      QStringLiteral("generator"), QStringLiteral("p"), QString()}));
            RunStore writer;
            QVERIFY(!writer.open(path, OpenOptions{OpenOptions::Access::Write, false}));
        }
        const auto after = kwb::test::FileSnapshot::of(path);
        QVERIFY2(after == before, qPrintable(before.describe() + QStringLiteral("\n") + after.describe()));
    }

    void olderStoreMigratedAndSaid()
    {
        const QString path = dbPath();
        {
            RunStore store;
            QVERIFY(store.open(path, {RunStore::migrations().first()}));
            QVERIFY(store.createRun(QStringLiteral("old"), QStringLiteral("zero_shot"), QJsonObject()));
        }
        const StoreFile file = RunStore::inspect(path);
        QCOMPARE(file.kind, StoreFile::Kind::Older);
        QCOMPARE(file.schemaVersion, 1);
        QVERIFY2(file.summary().contains(QStringLiteral("migrates it to schema %1").arg(RunStore::schemaVersion())),
                 qPrintable(file.summary()));
        RunStore store;
        QVERIFY2(store.open(path), qPrintable(store.errorString()));
        QCOMPARE(store.migratedFrom(), 1);
        QVERIFY2(store.openNote().contains(QLatin1String("migrated")), qPrintable(store.openNote()));
        QCOMPARE(store.fileSchemaVersion(), RunStore::schemaVersion());
    }

    void olderReadOnlyStoreReadThroughACopy()
    {
        const QString path = dbPath();
        {
            RunStore store;
            QVERIFY(store.open(path, {RunStore::migrations().first()}));
            QVERIFY(store.createRun(QStringLiteral("old"), QStringLiteral("zero_shot"), QJsonObject()));
        }
        const kwb::test::ReadOnlyGuard readOnly(path);
        const auto before = kwb::test::FileSnapshot::of(path);
        const auto copies = [] {
            return QDir::temp().entryList({QStringLiteral("kwb-store-%1-*").arg(QCoreApplication::applicationPid())},
                                          QDir::Files);
        };
        {
            RunStore a, b;
            QVERIFY2(a.open(path), qPrintable(a.errorString()));
            QVERIFY(a.isReadOnly());
            QCOMPARE(a.migratedFrom(), 0);
            QVERIFY2(a.openNote().contains(QLatin1String("copy")), qPrintable(a.openNote()));
            QCOMPARE(a.fileSchemaVersion(), RunStore::schemaVersion()); // the copy's
            QCOMPARE(a.runs().size(), 1);
            QCOMPARE(a.evaluations(a.runs().first().id).size(), 0);
            QVERIFY(b.open(path)); // the same copy
            QCOMPARE(copies().size(), 1);
            QVERIFY(!a.createRun(QStringLiteral("no"), QStringLiteral("x"), QJsonObject()));
        }
        QCOMPARE(copies().size(), 0); // removed with the last store reading it
        QCOMPARE(RunStore::inspect(path).schemaVersion, 1);
        const auto after = kwb::test::FileSnapshot::of(path);
        QVERIFY2(after == before, qPrintable(before.describe() + QStringLiteral("\n") + after.describe()));
    }

    void readAccessNeverCreates()
    {
        const QString path = dbPath();
        RunStore store;
        QVERIFY(!store.open(path, OpenOptions{OpenOptions::Access::Read, false}));
        QVERIFY(!QFileInfo::exists(path));
        QCOMPARE(RunStore::inspect(path).kind, StoreFile::Kind::Missing);
    }

    void compressedStoreNamed()
    {
        const QString path = dbPath();
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QByteArray("\xFD"
                              "7zXZ\0\0\x04\xe6\xd6\xb4\x46",
                              12) +
                   QByteArray(100, '\x01'));
        file.close();
        const StoreFile found = RunStore::inspect(path);
        QCOMPARE(found.kind, StoreFile::Kind::NotSQLite);
        QVERIFY2(found.summary().contains(QLatin1String("xz-compressed")), qPrintable(found.summary()));
    }

    void notADatabase()
    {
        const QString path = dbPath();
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write(QByteArray(8192, 'j'));
        file.close();
        RunStore store;
        QVERIFY(!store.open(path));
        QVERIFY2(store.errorString().contains(QLatin1String("not a run store")), qPrintable(store.errorString()));
        QCOMPARE(store.file().kind, StoreFile::Kind::NotSQLite);
        QVERIFY2(store.errorString().contains(QLatin1String("a text file")), qPrintable(store.errorString()));
        QCOMPARE(QFileInfo(path).size(), 8192);
        QVERIFY(!store.open(m_dir.filePath(QStringLiteral("no/such/dir/x.kwbrun"))));
        QVERIFY(!store.errorString().isEmpty());
    }

    void resumeUnits()
    {
        RunStore store;
        QVERIFY(store.open(dbPath()));
        const auto runId = store.createRun(QStringLiteral("agent"), QStringLiteral("agent"), QJsonObject());
        const auto other = store.createRun(QStringLiteral("other"), QStringLiteral("agent"), QJsonObject());
        QVERIFY(runId && other);
        const QString task = QStringLiteral("L2/3");
        const QString generator = QStringLiteral("generator");
        // Turn 0: the analyzer answered (no candidate); samples 0 and 2 were evaluated, sample 1
        // was parsed but not evaluated (killed there), sample 3 has only its prompt.
        const auto analyzerPrompt =
            store.addPrompt({0, *runId, task, 0, 0, QStringLiteral("analyzer"), QStringLiteral("analyse"), QString()});
        QVERIFY(analyzerPrompt);
        QVERIFY(store.addResponse(
            {0, *analyzerPrompt, QStringLiteral("the chain is conv, bias, relu"), 10, 20, 30, QString()}));
        QVERIFY(addChain(store, *runId, task, 0, 0, generator, QStringLiteral("correct")));
        QVERIFY(addChain(store, *runId, task, 0, 1, generator));
        QVERIFY(addChain(store, *runId, task, 0, 2, generator, QStringLiteral("compile_error")));
        QVERIFY(store.addPrompt({0, *runId, task, 0, 3, generator, QStringLiteral("p"), QString()}));
        // Sample 4's request failed: not answered.
        const auto failedPrompt = store.addPrompt({0, *runId, task, 0, 4, generator, QStringLiteral("p"), QString()});
        QVERIFY(failedPrompt);
        QVERIFY(
            store.addResponse({0, *failedPrompt, QString(), std::nullopt, std::nullopt, 5, QStringLiteral("refused")}));
        // Another run's work is not this run's.
        QVERIFY(addChain(store, *other, task, 0, 3, generator, QStringLiteral("correct")));

        const QSet<UnitKey> done = store.completedUnits(*runId);
        QCOMPARE(done, (QSet<UnitKey>{{task, 0, 0, generator}, {task, 0, 2, generator}}));
        QCOMPARE(store.completedUnits(*other), (QSet<UnitKey>{{task, 0, 3, generator}}));

        const QHash<UnitKey, ResponseRecord> answered = store.answeredUnits(*runId);
        QCOMPARE(answered.size(), 4); // analyzer, samples 0, 1, 2
        const UnitKey analyzer{task, 0, 0, QStringLiteral("analyzer")};
        QVERIFY(answered.contains(analyzer));
        QCOMPARE(answered[analyzer].text, QStringLiteral("the chain is conv, bias, relu"));
        QCOMPARE(answered[analyzer].tokensOut, std::optional<qint64>(20));
        QVERIFY(answered.contains(UnitKey{task, 0, 1, generator}));
        QVERIFY(!answered.contains(UnitKey{task, 0, 3, generator}));
        QVERIFY(!answered.contains(UnitKey{task, 0, 4, generator}));

        // After a reopen the same.
        store.close();
        QVERIFY(store.open(dbPath()));
        QCOMPARE(store.completedUnits(*runId).size(), 2);
        QCOMPARE(store.evaluations(*runId).size(), 2);
    }

    void killedWriter_data()
    {
        // Three writers killed one after another into the same file, each after a different
        // number of committed units, so the kill lands at different points of the insert cycle.
        QTest::addColumn<int>("killAfter");
        QTest::newRow("after 100") << 100;
        QTest::newRow("after 257") << 257;
        QTest::newRow("after 401") << 401;
    }

    void killedWriter()
    {
        QFETCH(int, killAfter);
        const QString path = dbPath(QStringLiteral("killed"));
        QProcess child;
        child.setProcessChannelMode(QProcess::SeparateChannels);
        child.start(QCoreApplication::applicationFilePath(), {QStringLiteral("--child-writer"), path});
        QVERIFY2(child.waitForStarted(10000), qPrintable(child.errorString()));

        qint64 runId = 0;
        QList<qint64> committed;
        QByteArray pending;
        auto consume = [&] {
            pending += child.readAllStandardOutput();
            qsizetype newline;
            while ((newline = pending.indexOf('\n')) >= 0) {
                const QByteArray line = pending.left(newline);
                pending.remove(0, newline + 1);
                if (line.startsWith("run "))
                    runId = line.mid(4).toLongLong();
                else if (line.startsWith("committed "))
                    committed.append(line.mid(10).toLongLong());
            }
        };
        QDeadlineTimer deadline(60000);
        while (committed.size() < killAfter && !deadline.hasExpired() && child.state() == QProcess::Running) {
            child.waitForReadyRead(1000);
            consume();
        }
        QVERIFY2(committed.size() >= killAfter, child.readAllStandardError().constData());
        child.kill(); // SIGKILL, in the middle of some insert
        QVERIFY(child.waitForFinished(10000));
        consume();
        QCOMPARE(child.exitStatus(), QProcess::CrashExit);
        QVERIFY(runId > 0);

        RunStore store;
        QVERIFY2(store.open(path), qPrintable(store.errorString()));
        QCOMPARE(store.integrityCheck(), QStringLiteral("ok"));
        QCOMPARE(store.journalMode(), QStringLiteral("wal"));
        const QList<EvaluationRecord> evaluations = store.evaluations(runId);
        QSet<qint64> stored;
        for (const EvaluationRecord& e : evaluations)
            stored.insert(e.id);
        for (const qint64 id : committed)
            QVERIFY2(stored.contains(id), qPrintable(QStringLiteral("evaluation %1 reported but missing").arg(id)));
        // At most the unit in flight is lost (its evaluation may have committed unreported).
        QVERIFY(evaluations.size() >= committed.size());
        QVERIFY(evaluations.size() <= committed.size() + 1);
        QCOMPARE(store.completedUnits(runId).size(), evaluations.size());
        // A resumed run appends to the same file.
        const auto chain = addChain(store, runId, QStringLiteral("L3/1"), 0, 0, QStringLiteral("generator"),
                                    QStringLiteral("correct"));
        QVERIFY2(chain, qPrintable(store.errorString()));
        QCOMPARE(store.evaluations(runId).size(), evaluations.size() + 1);
        QCOMPARE(store.integrityCheck(), QStringLiteral("ok"));
    }
};

int main(int argc, char* argv[])
{
    QCoreApplication app(argc, argv);
    if (argc == 3 && qstrcmp(argv[1], "--child-writer") == 0)
        return childWriter(QString::fromLocal8Bit(argv[2]));
    TestRunStore test;
    QTEST_SET_MAIN_SOURCE_PATH
    return QTest::qExec(&test, argc, argv);
}

#include "tst_runstore.moc"
