// Where a run's answers came from (core/study/provenance.h): the one rule, the prompt set's name
// and the banner's sentence (issue 38 item 3).

#include "core/study/provenance.h"

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
    }
};

QTEST_GUILESS_MAIN(TestProvenance)
#include "tst_provenance.moc"
