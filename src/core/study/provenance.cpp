#include "core/study/provenance.h"

#include "core/config/buildinfo.h"

#include <QCryptographicHash>
#include <QDir>
#include <QJsonObject>
#include <QMap>
#include <QSet>
#include <QStringList>

#include <algorithm>
#include <utility>

namespace kwb {

AnswerSource answerSource(const RunConfig& config)
{
    if (config.isImport())
        return AnswerSource::Imported;
    if (config.model == QLatin1String(kFixtureModel))
        return AnswerSource::FixtureServer;
    // kwb-fixture-llm --recorded lists "recorded-model:<the model that wrote the text>" where its
    // folder names that model (the generation configs), plain kRecordedModel where not.
    if (config.model == QLatin1String(kRecordedModel) || config.model.startsWith(QLatin1String(kRecordedModel) + u':'))
        return AnswerSource::RecordedServer;
    return config.model.isEmpty() ? AnswerSource::Unknown : AnswerSource::Model;
}

bool isStandInSource(AnswerSource source)
{
    return source == AnswerSource::FixtureServer || source == AnswerSource::RecordedServer;
}

QString promptSetName(const RunConfig& config)
{
    if (config.templates.isEmpty())
        return QStringLiteral("–");
    QCryptographicHash hash(QCryptographicHash::Sha256);
    for (auto it = config.templates.cbegin(); it != config.templates.cend(); ++it) { // sorted by name
        hash.addData(it.key().toUtf8());
        hash.addData(QByteArrayView("\0", 1));
        hash.addData(it.value().toUtf8());
        hash.addData(QByteArrayView("\0", 1));
    }
    const QString folder =
        config.promptsDir.isEmpty() ? QStringLiteral("templates") : QDir(config.promptsDir).dirName();
    return QStringLiteral("%1 · %2").arg(folder, QString::fromLatin1(hash.result().toHex().left(8)));
}

QString RunProvenance::sourceName() const
{
    switch (source) {
    case AnswerSource::Model: return QStringLiteral("model");
    case AnswerSource::FixtureServer: return QStringLiteral("fixture_server");
    case AnswerSource::RecordedServer: return QStringLiteral("recorded_server");
    case AnswerSource::Imported: return QStringLiteral("imported");
    case AnswerSource::Unknown: break;
    }
    return QStringLiteral("unknown");
}

QJsonObject RunProvenance::toJson() const
{
    QJsonObject templates;
    for (auto it = templateHashes.cbegin(); it != templateHashes.cend(); ++it)
        templates.insert(it.key(), it.value());
    return {{QStringLiteral("answered_by"), sourceText()},
            {QStringLiteral("source"), sourceName()},
            {QStringLiteral("model"), model},
            {QStringLiteral("endpoint"), endpoint},
            {QStringLiteral("answer_format"), answerFormat},
            {QStringLiteral("prompt_set"), promptSet},
            {QStringLiteral("templates"), templates},
            {QStringLiteral("versions"), versions},
            {QStringLiteral("gpu"), gpu}};
}

QString RunProvenance::sourceText() const
{
    switch (source) {
    case AnswerSource::FixtureServer: return QStringLiteral("fixture server (%1)").arg(model);
    case AnswerSource::RecordedServer: return QStringLiteral("recorded answers (%1)").arg(model);
    case AnswerSource::Imported: return QStringLiteral("imported");
    case AnswerSource::Unknown: return QStringLiteral("–");
    case AnswerSource::Model: break;
    }
    return model;
}

RunProvenance runProvenance(const RunInfo& run)
{
    const RunConfig& config = run.config;
    RunProvenance p;
    p.source = answerSource(config);
    p.model = config.model.isEmpty() ? QStringLiteral("–") : config.model;
    p.endpoint = config.isImport() ? config.import.value(QLatin1String("directory")).toString() : config.endpoint;
    if (p.endpoint.isEmpty())
        p.endpoint = QStringLiteral("–");
    p.answerFormat = config.answerFormat;
    p.promptSet = promptSetName(config);
    for (auto it = config.templates.cbegin(); it != config.templates.cend(); ++it)
        p.templateHashes.insert(
            it.key(),
            QString::fromLatin1(QCryptographicHash::hash(it.value().toUtf8(), QCryptographicHash::Sha256).toHex()));
    QStringList versions;
    const auto version = [&versions](const char* program, const QString& value) {
        if (!value.isEmpty())
            versions << QStringLiteral("%1 %2").arg(QLatin1String(program), value);
    };
    if (!config.versions.kwb.isEmpty())
        version("kwb", versionWithCommit(config.versions.kwb, config.versions.kwbCommit));
    version("worker", config.versions.worker);
    version("torch", config.versions.torch);
    version("Qt", config.versions.qt);
    p.versions = versions.isEmpty() ? QStringLiteral("–") : versions.join(QStringLiteral(" · "));
    const DeviceFacts& gpu = run.gpu;
    if (gpu.available && !gpu.name.isEmpty()) {
        QStringList facts;
        if (!gpu.arch.isEmpty())
            facts << gpu.arch;
        if (!gpu.driverVersion.isEmpty())
            facts << QStringLiteral("CUDA driver %1").arg(gpu.driverVersion);
        p.gpu = facts.isEmpty() ? gpu.name : QStringLiteral("%1 (%2)").arg(gpu.name, facts.join(QStringLiteral(", ")));
    } else if (!gpu.raw.isEmpty()) {
        p.gpu = gpu.reason.isEmpty() ? QStringLiteral("no GPU") : QStringLiteral("no GPU: %1").arg(gpu.reason);
    } else {
        p.gpu = QStringLiteral("–");
    }
    QString what;
    switch (p.source) {
    case AnswerSource::FixtureServer:
        what = QStringLiteral("kwb-fixture-llm, the project's test server: its answers are the project's own candidate "
                              "fixtures, no language model wrote them");
        break;
    case AnswerSource::RecordedServer:
        what = QStringLiteral("kwb-fixture-llm --recorded: a model's recorded answers replayed, not written for these "
                              "prompts");
        break;
    case AnswerSource::Imported:
        what = QStringLiteral("imported generations (kwb import %1): no server was asked")
                   .arg(config.import.value(QLatin1String("format")).toString());
        break;
    case AnswerSource::Unknown: what = QStringLiteral("no model stored"); break;
    case AnswerSource::Model: what = QStringLiteral("the model the server named"); break;
    }
    p.details =
        QStringLiteral("Answers: %1\nModel: %2\n%3: %4\nAnswer format: %5\nPrompt set: %6%7\nVersions: %8\nGPU: %9")
            .arg(what, p.model, config.isImport() ? QStringLiteral("Imported from") : QStringLiteral("Endpoint"),
                 p.endpoint, p.answerFormat, p.promptSet,
                 config.promptsDir.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(config.promptsDir), p.versions,
                 p.gpu);
    return p;
}

QList<PromptRecord> promptsSentFor(const QList<PromptRecord>& taskPrompts, int turn, int sample)
{
    // Per (turn, role): the sample's own prompts, else those of the lowest sample (a role asked
    // once for every sample).
    QMap<std::pair<int, QString>, int> lowest;
    QSet<std::pair<int, QString>> own;
    for (const PromptRecord& p : taskPrompts) {
        if (p.turn > turn)
            continue;
        const std::pair<int, QString> key{p.turn, p.role};
        if (p.sample == sample)
            own.insert(key);
        const auto it = lowest.find(key);
        if (it == lowest.end() || p.sample < it.value())
            lowest.insert(key, p.sample);
    }
    QList<PromptRecord> sent;
    for (const PromptRecord& p : taskPrompts) {
        if (p.turn > turn)
            continue;
        const std::pair<int, QString> key{p.turn, p.role};
        if (own.contains(key) ? p.sample == sample : p.sample == lowest.value(key))
            sent.append(p);
    }
    std::stable_sort(sent.begin(), sent.end(),
                     [](const PromptRecord& a, const PromptRecord& b) { return a.turn < b.turn; });
    return sent;
}

QString promptsText(const QList<PromptRecord>& prompts)
{
    if (prompts.isEmpty())
        return QStringLiteral("(no prompt stored)");
    QStringList parts;
    for (const PromptRecord& p : prompts)
        parts << QStringLiteral("━━ turn %1 · %2 · sample %3%4 ━━\n%5")
                     .arg(p.turn)
                     .arg(p.role)
                     .arg(p.sample)
                     .arg(p.templateHash.isEmpty() ? QString()
                                                   : QStringLiteral(" · template %1").arg(p.templateHash.left(8)),
                          p.text);
    return parts.join(QStringLiteral("\n\n"));
}

QList<TemplateComparison> compareTemplates(const QMap<QString, QString>& setTexts, const RunConfig& run)
{
    const auto sha = [](const QString& text) {
        return QCryptographicHash::hash(text.toUtf8(), QCryptographicHash::Sha256);
    };
    QMap<QString, TemplateMatch> byName;
    for (auto it = setTexts.cbegin(); it != setTexts.cend(); ++it) {
        const auto used = run.templates.constFind(it.key());
        byName.insert(it.key(), used == run.templates.cend()           ? TemplateMatch::NotUsedByRun
                                : sha(used.value()) == sha(it.value()) ? TemplateMatch::Same
                                                                       : TemplateMatch::Differs);
    }
    for (auto it = run.templates.cbegin(); it != run.templates.cend(); ++it)
        if (!byName.contains(it.key()))
            byName.insert(it.key(), TemplateMatch::OnlyInRun);
    QList<TemplateComparison> out;
    for (auto it = byName.cbegin(); it != byName.cend(); ++it)
        out.append(TemplateComparison{it.key(), it.value()});
    return out;
}

QString standInAnswersNote(const QList<RunInfo>& runs)
{
    int fixture = 0, recorded = 0;
    QStringList recordedModels; // as the runs stored them: "recorded-model:<whose text>" where the server knew
    for (const RunInfo& run : runs) {
        const AnswerSource source = answerSource(run.config);
        fixture += source == AnswerSource::FixtureServer;
        recorded += source == AnswerSource::RecordedServer;
        if (source == AnswerSource::RecordedServer && !recordedModels.contains(run.config.model))
            recordedModels << run.config.model;
    }
    if (!fixture && !recorded)
        return QString();
    QStringList parts;
    if (fixture)
        parts << QStringLiteral("%1 of its %2 runs were answered by kwb-fixture-llm, the project's test server (model "
                                "\"%3\"): its answers are the project's own fixtures, so their numbers measure the "
                                "workbench, not a language model")
                     .arg(fixture)
                     .arg(runs.size())
                     .arg(QLatin1String(kFixtureModel));
    if (recorded)
        parts << QStringLiteral("%1 of its %2 runs replayed a model's recorded answers (kwb-fixture-llm --recorded, "
                                "model \"%3\"): real model text, not written for these prompts")
                     .arg(recorded)
                     .arg(runs.size())
                     .arg(recordedModels.join(QStringLiteral("\", \"")));
    return QStringLiteral("Not a live model: ") + parts.join(QStringLiteral("; ")) + QLatin1Char('.');
}

} // namespace kwb
