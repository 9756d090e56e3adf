// Every shipped template (prompts/), for every task the worker lists (tasks/, through the recorded
// `tasks` response), turn 1 and turn 2 with feedback, renders with the H200's stored device facts
// without saying "unknown" where the facts exist. The bug it guards: the study run's prompts said
// "memory bandwidth unknown, … ridge point unknown" because the renderer read hbm_theoretical_gbps
// while the stored facts (older workers) carry hbm_theoretical_gbs.
//
// Device facts: tests/fixtures/device/*.json (facts as a run stores them) and the recorded
// `device` responses under tests/protocol/recorded/ (both spellings, with and without ceilings).

#include "core/prompts/promptrenderer.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QRegularExpression>
#include <QTest>

using namespace kwb;

namespace {

const QString kRecorded = QStringLiteral(KWB_PROTOCOL_GOLDEN_DIR "/recorded");

QByteArray readBytes(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(path));
    return f.readAll();
}

QJsonObject readObject(const QString& path)
{
    QJsonParseError error;
    const QJsonDocument document = QJsonDocument::fromJson(readBytes(path), &error);
    if (!document.isObject())
        qFatal("%s: not a JSON object: %s", qPrintable(path), qPrintable(error.errorString()));
    return document.object();
}

/// The recorded response of each file matching the pattern, keyed by its "task" (empty when none).
QHash<QString, QJsonObject> recordedByTask(const QString& pattern)
{
    QHash<QString, QJsonObject> out;
    for (const QString& name : QDir(kRecorded).entryList({pattern}, QDir::Files))
        out.insert(readObject(QDir(kRecorded).filePath(name)).value(QLatin1String("task")).toString(),
                   readObject(QDir(kRecorded).filePath(name)));
    return out;
}

// What partials/device.mustache prints when a number is missing: "memory bandwidth {{hbm_gbps}}",
// "FP32 peak {{fp32_tflops}}", "ridge point {{ridge_point}}" with the value "unknown".
const QStringList kUnknownPhrases{QStringLiteral("memory bandwidth unknown"), QStringLiteral("FP32 peak unknown"),
                                  QStringLiteral("ridge point unknown")};

} // namespace

class TestPromptRenderAll : public QObject
{
    Q_OBJECT

    QJsonArray m_tasks;
    QList<QPair<QString, QJsonObject>> m_devices;   // name, facts
    QList<QPair<QString, QJsonObject>> m_feedbacks; // name, evaluate response with "answer"
    QHash<QString, QJsonObject> m_analyze, m_profile;

private Q_SLOTS:
    void initTestCase()
    {
        // The tasks as the app gets them: the worker's `tasks` response.
        const QJsonObject tasks = readObject(kRecorded + QStringLiteral("/tasks.cpu.response.json"));
        m_tasks = tasks.value(QLatin1String("tasks")).toArray();
        int taskFiles = 0;
        for (QDirIterator it(QStringLiteral(KWB_TASKS_DIR), {QStringLiteral("*.toml")}, QDir::Files,
                             QDirIterator::Subdirectories);
             it.hasNext(); it.next())
            ++taskFiles;
        // tst_worker_protocol checks the recording against the worker; this, that it lists every file.
        QCOMPARE(m_tasks.size(), taskFiles);

        const QDir fixtures(QStringLiteral(KWB_DEVICE_FIXTURES_DIR));
        for (const QString& name : fixtures.entryList({QStringLiteral("*.json")}, QDir::Files))
            m_devices.append({name, readObject(fixtures.filePath(name))});
        for (const QString& name : QDir(kRecorded).entryList({QStringLiteral("device*.h200.response.json")}))
            m_devices.append({name, readObject(QDir(kRecorded).filePath(name))});
        QVERIFY(m_devices.size() >= 3);
        for (const auto& device : m_devices)
            QVERIFY2(device.second.value(QLatin1String("available")).toBool(), qPrintable(device.first));

        // Turn 2: each recorded evaluate response as the previous answer's feedback.
        for (const QString& name : QDir(kRecorded).entryList({QStringLiteral("evaluate_*.response.json")})) {
            QJsonObject feedback = readObject(QDir(kRecorded).filePath(name));
            QString request = name;
            request.replace(QStringLiteral(".response.json"), QStringLiteral(".request"));
            feedback.insert(QStringLiteral("answer"),
                            readObject(QDir(kRecorded).filePath(request)).value(QLatin1String("answer")));
            m_feedbacks.append({name, feedback});
        }
        QVERIFY(m_feedbacks.size() >= 2);
        m_analyze = recordedByTask(QStringLiteral("analyze_*.response.json"));
        m_profile = recordedByTask(QStringLiteral("profile_*.response.json"));
    }

    void everyTemplateEveryTaskKnowsTheDevice_data()
    {
        QTest::addColumn<QString>("file");
        const QStringList templates = PromptRenderer(QStringLiteral(KWB_PROMPTS_DIR)).templates();
        QVERIFY(templates.size() >= 12);
        for (const QString& file : templates)
            QTest::newRow(qPrintable(file)) << file;
    }

    void everyTemplateEveryTaskKnowsTheDevice()
    {
        QFETCH(QString, file);
        const PromptRenderer renderer(QStringLiteral(KWB_PROMPTS_DIR));
        const bool showsDevice =
            QString::fromUtf8(readBytes(QStringLiteral(KWB_PROMPTS_DIR "/") + file)).contains(QLatin1String("{{> device}}"));
        int rendered = 0;
        for (const QJsonValue& taskValue : std::as_const(m_tasks)) {
            const QJsonObject task = taskValue.toObject();
            const QString id = task.value(QLatin1String("id")).toString();
            for (const auto& device : std::as_const(m_devices)) {
                QList<QPair<QString, QJsonObject>> turns{{QStringLiteral("turn 1"), QJsonObject()}};
                turns += m_feedbacks;
                for (int turn = 0; turn < turns.size(); ++turn) {
                    const QString where = QStringLiteral("%1, %2, %3, %4").arg(file, id, device.first, turns[turn].first);
                    QJsonObject context = PromptRenderer::buildContext(task, m_analyze.value(id), m_profile.value(id),
                                                                       device.second, turns[turn].second);
                    // The notes other roles would have written (RunController::context adds them).
                    context.insert(QStringLiteral("analysis"), QStringLiteral("1. **Op chain**: the forward's ops."));
                    context.insert(QStringLiteral("research"), QStringLiteral("- the APIs it uses"));
                    context.insert(QStringLiteral("diagnosis"), turn ? QJsonValue(QStringLiteral("what failed")) : false);
                    context.insert(QStringLiteral("critique"), turn ? QJsonValue(QStringLiteral("what to change")) : false);
                    context.insert(QStringLiteral("turn"), QString::number(turn ? 2 : 1));
                    context.insert(QStringLiteral("max_turns"), QStringLiteral("3"));
                    const auto r = renderer.render(file, context);
                    QVERIFY2(r.ok, qPrintable(where + QStringLiteral(": ") + r.error));
                    QVERIFY2(!r.text.contains(QLatin1String("{{")), qPrintable(where));
                    for (const QString& phrase : kUnknownPhrases)
                        QVERIFY2(!r.text.contains(phrase), qPrintable(where + QStringLiteral(": says \"") + phrase +
                                                                      QStringLiteral("\"")));
                    if (showsDevice)
                        QVERIFY2(r.text.contains(QStringLiteral("GPU: NVIDIA H200 (sm_90, 132 SMs)")), qPrintable(where));
                    ++rendered;
                }
            }
        }
        QCOMPARE(rendered, int(m_tasks.size() * m_devices.size() * (1 + m_feedbacks.size())));
    }
};

QTEST_GUILESS_MAIN(TestPromptRenderAll)
#include "tst_promptrender_all.moc"
