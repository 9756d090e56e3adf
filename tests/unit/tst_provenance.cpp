// Where a run's answers came from (core/study/provenance.h): the one rule, the prompt set's name
// and the banner's sentence (issue 38 item 3).

#include "core/study/provenance.h"

#include <QCryptographicHash>
#include <QJsonObject>
#include <QTest>

using namespace kwb;

namespace {

RunInfo runWith(const RunConfig& config)
{
    RunInfo info;
    info.id = 1;
    info.setConfig(config.toJson());
    return info;
}

} // namespace

class TestProvenance : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void answerSourceFromTheStoredModel()
    {
        RunConfig config;
        QCOMPARE(int(answerSource(config)), int(AnswerSource::Unknown));
        config.model = QStringLiteral("Qwen2.5-Coder-7B-Instruct");
        QCOMPARE(int(answerSource(config)), int(AnswerSource::Model));
        config.model = QString::fromLatin1(kFixtureModel);
        QCOMPARE(int(answerSource(config)), int(AnswerSource::FixtureServer));
        config.model = QString::fromLatin1(kRecordedModel);
        QCOMPARE(int(answerSource(config)), int(AnswerSource::RecordedServer));
        // Survives the store's JSON, as the window reads it.
        QCOMPARE(int(answerSource(RunConfig::fromJson(config.toJson()))), int(AnswerSource::RecordedServer));
        // The recorded server that knows whose text it replays says so, and is still one; a model
        // that only begins with the same letters is not.
        config.model = QStringLiteral("recorded-model:Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8");
        QCOMPARE(int(answerSource(config)), int(AnswerSource::RecordedServer));
        QCOMPARE(runProvenance(runWith(config)).sourceText(),
                 QStringLiteral("recorded answers (recorded-model:Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8)"));
        config.model = QStringLiteral("recorded-modeller-7b");
        QCOMPARE(int(answerSource(config)), int(AnswerSource::Model));
        config.import = QJsonObject{{QStringLiteral("format"), QStringLiteral("kernelbench")},
                                    {QStringLiteral("directory"), QStringLiteral("/data/gens")}};
        QCOMPARE(int(answerSource(config)), int(AnswerSource::Imported));
        QCOMPARE(runProvenance(runWith(config)).endpoint, QStringLiteral("/data/gens"));
    }

    // Two runs read as one prompt set only with the same wording, whatever folder held it.
    void promptSetNamesTheWording()
    {
        RunConfig a;
        a.promptsDir = QStringLiteral("/src/prompts");
        a.templates.insert(QStringLiteral("zero-shot/generator"), QStringLiteral("Write a kernel."));
        RunConfig b = a;
        QCOMPARE(promptSetName(a), promptSetName(b));
        QVERIFY(promptSetName(a).startsWith(QStringLiteral("prompts · ")));
        b.templates[QStringLiteral("zero-shot/generator")] = QStringLiteral("Write a fast kernel.");
        QVERIFY(promptSetName(a) != promptSetName(b));
        QCOMPARE(promptSetName(RunConfig()), QStringLiteral("–"));
    }

    void provenanceCells()
    {
        RunConfig config;
        config.model = QString::fromLatin1(kFixtureModel);
        config.endpoint = QStringLiteral("http://127.0.0.1:42743/v1");
        config.answerFormat = QStringLiteral("kernelbench");
        const RunProvenance p = runProvenance(runWith(config));
        QCOMPARE(p.sourceText(), QStringLiteral("fixture server (fixture-model)"));
        QCOMPARE(p.endpoint, QStringLiteral("http://127.0.0.1:42743/v1"));
        QCOMPARE(p.answerFormat, QStringLiteral("kernelbench"));
        QVERIFY(p.details.contains(QStringLiteral("no language model wrote them")));
        QVERIFY(p.details.contains(QStringLiteral("Endpoint: http://127.0.0.1:42743/v1")));
        // Nothing recorded: said so, not left blank.
        QCOMPARE(p.versions, QStringLiteral("–"));
        QCOMPARE(p.gpu, QStringLiteral("–"));
        QVERIFY(p.templateHashes.isEmpty());
    }

    // The versions, the GPU and each template's hash: what the exports add to the four cells.
    void versionsGpuAndTemplateHashes()
    {
        RunConfig config;
        config.model = QStringLiteral("Qwen2.5-Coder-7B-Instruct");
        config.versions.kwb = QStringLiteral("0.1.0");
        config.versions.worker = QStringLiteral("0.1.0");
        config.versions.qt = QStringLiteral("6.4.2");
        config.templates.insert(QStringLiteral("agent/analyzer"), QStringLiteral("Read the task."));
        config.gpu = decodeDeviceFacts(QJsonObject{{QStringLiteral("available"), true},
                                                   {QStringLiteral("name"), QStringLiteral("NVIDIA H200")},
                                                   {QStringLiteral("arch"), QStringLiteral("sm_90")}});
        RunProvenance p = runProvenance(runWith(config));
        QCOMPARE(p.versions, QStringLiteral("kwb 0.1.0 · worker 0.1.0 · Qt 6.4.2"));
        // kwb's commit beside its version, where the run stored one (issue 38 item 1).
        config.versions.kwbCommit = QStringLiteral("036ecb77d146-dirty");
        QCOMPARE(runProvenance(runWith(config)).versions,
                 QStringLiteral("kwb 0.1.0 (036ecb77d146-dirty) · worker 0.1.0 · Qt 6.4.2"));
        config.versions.kwbCommit.clear();
        QCOMPARE(p.gpu, QStringLiteral("NVIDIA H200 (sm_90)"));
        QCOMPARE(
            p.templateHashes.value(QStringLiteral("agent/analyzer")),
            QString::fromLatin1(
                QCryptographicHash::hash(QByteArrayLiteral("Read the task."), QCryptographicHash::Sha256).toHex()));
        QVERIFY(p.details.contains(QStringLiteral("GPU: NVIDIA H200 (sm_90)")));
        QCOMPARE(p.toJson().value(QStringLiteral("source")).toString(), QStringLiteral("model"));
        config.gpu = decodeDeviceFacts(
            QJsonObject{{QStringLiteral("available"), false}, {QStringLiteral("reason"), QStringLiteral("no driver")}});
        QCOMPARE(runProvenance(runWith(config)).gpu, QStringLiteral("no GPU: no driver"));
    }

    // Sample 1 of turn 2 was asked: the analyzer once for every sample (stored as sample 0), its
    // own generator prompt of turn 1, the triager's note and its retry of turn 2; never sample 0's
    // generator prompts, nor turn 3.
    void promptsSentForASample()
    {
        const auto p = [](qint64 id, int turn, int sample, const QString& role) {
            return PromptRecord{id,
                                1,
                                QStringLiteral("L2/1"),
                                turn,
                                sample,
                                role,
                                QStringLiteral("text %1").arg(id),
                                QStringLiteral("abcdef0123456789")};
        };
        const QList<PromptRecord> all = {
            p(1, 1, 0, QStringLiteral("analyzer")),  p(2, 1, 0, QStringLiteral("generator")),
            p(3, 1, 1, QStringLiteral("generator")), p(4, 2, 0, QStringLiteral("triager")),
            p(5, 2, 0, QStringLiteral("generator")), p(6, 2, 1, QStringLiteral("generator")),
            p(7, 3, 1, QStringLiteral("generator"))};
        QList<qint64> ids;
        for (const PromptRecord& r : promptsSentFor(all, 2, 1))
            ids << r.id;
        QCOMPARE(ids, (QList<qint64>{1, 3, 4, 6}));
        const QString text = promptsText(promptsSentFor(all, 1, 0));
        QVERIFY(text.contains(QStringLiteral("turn 1 · analyzer · sample 0 · template abcdef01")));
        QVERIFY(text.contains(QStringLiteral("text 2")));
        QVERIFY(!text.contains(QStringLiteral("text 3")));
        QCOMPARE(promptsText({}), QStringLiteral("(no prompt stored)"));
    }

    void templatesAgainstARun()
    {
        RunConfig run;
        run.templates = {{QStringLiteral("agent/generator"), QStringLiteral("Write it.")},
                         {QStringLiteral("partials/task"), QStringLiteral("{{task}}")},
                         {QStringLiteral("pilot/critic"), QStringLiteral("More.")}};
        const QMap<QString, QString> set = {{QStringLiteral("agent/generator"), QStringLiteral("Write it fast.")},
                                            {QStringLiteral("partials/task"), QStringLiteral("{{task}}")},
                                            {QStringLiteral("zero-shot/generator"), QStringLiteral("Go.")}};
        const QList<TemplateComparison> c = compareTemplates(set, run);
        QCOMPARE(c.size(), 4);
        QCOMPARE(c[0].name, QStringLiteral("agent/generator"));
        QCOMPARE(int(c[0].match), int(TemplateMatch::Differs));
        QCOMPARE(c[1].name, QStringLiteral("partials/task"));
        QCOMPARE(int(c[1].match), int(TemplateMatch::Same));
        QCOMPARE(c[2].name, QStringLiteral("pilot/critic"));
        QCOMPARE(int(c[2].match), int(TemplateMatch::OnlyInRun));
        QCOMPARE(int(c[3].match), int(TemplateMatch::NotUsedByRun));
    }

    void bannerCountsTheStandInRuns()
    {
        RunConfig model, fixture, recorded;
        model.model = QStringLiteral("gpt-x");
        fixture.model = QString::fromLatin1(kFixtureModel);
        recorded.model = QString::fromLatin1(kRecordedModel);
        QCOMPARE(standInAnswersNote({runWith(model)}), QString());
        QCOMPARE(standInAnswersNote({}), QString());
        const QString note = standInAnswersNote({runWith(model), runWith(fixture), runWith(recorded)});
        QVERIFY(note.startsWith(QStringLiteral("Not a live model: 1 of its 3 runs were answered by kwb-fixture-llm")));
        QVERIFY(note.contains(QStringLiteral("1 of its 3 runs replayed a model's recorded answers")));
        // The banner names whose text each recorded run replayed.
        RunConfig named = recorded;
        named.model = QStringLiteral("recorded-model:Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8");
        const QString both = standInAnswersNote({runWith(recorded), runWith(named)});
        QVERIFY2(both.contains(QStringLiteral(
                     "model \"recorded-model\", \"recorded-model:Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8\")")),
                 qPrintable(both));
    }
};

QTEST_GUILESS_MAIN(TestProvenance)
#include "tst_provenance.moc"
