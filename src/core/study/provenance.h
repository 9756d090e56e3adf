#pragma once
// Where a run's answers came from (issue 38 item 3): the model, the endpoint, the answer format
// and the prompt set, and whether the "model" was one at all. A study answered by the project's
// test server reads like a finding about a language model ("agent 100 % vs zero-shot 30 %") unless
// every table and the window say what answered; this is the one place that decides it.
//
// How a run records its server: by the model name it stored (RunConfig::model). kwb-fixture-llm
// (tests/tools/fixturellmserver.cpp) lists one model, kFixtureModel for its fixture answers and
// kRecordedModel when it serves a folder of recorded real answers (--recorded); the window's
// Launch page takes the model the server lists, and the scripts and docs name it. An imported run
// (`kwb import`) asked no server: its answers are a folder's generations.

#include "core/config/runconfig.h"
#include "core/store/runstore.h"

#include <QJsonObject>
#include <QList>
#include <QMap>
#include <QString>

namespace kwb {

/// The model kwb-fixture-llm lists for its fixture answers.
inline constexpr char kFixtureModel[] = "fixture-model";
/// The model kwb-fixture-llm lists with --recorded: real model text, replayed.
inline constexpr char kRecordedModel[] = "recorded-model";

enum class AnswerSource {
    Model,          ///< a server that names another model: taken to be one
    FixtureServer,  ///< kwb-fixture-llm's fixtures: no model wrote them
    RecordedServer, ///< kwb-fixture-llm --recorded: a model's text, replayed, not asked for these prompts
    Imported,       ///< `kwb import`: a folder of generations, no server asked
    Unknown,        ///< no model stored
};

/// The one rule (see the header).
AnswerSource answerSource(const RunConfig& config);
/// Whether the answers were not written by a model for this run's prompts (fixture or recorded).
bool isStandInSource(AnswerSource source);

/// A run's provenance as every table shows it.
struct RunProvenance
{
    AnswerSource source = AnswerSource::Unknown;
    QString model;        ///< the stored model name; "–" when none
    QString endpoint;     ///< the server's URL; for an import, the folder it read
    QString answerFormat; ///< "native" or "kernelbench"
    QString promptSet;    ///< promptSetName()
    /// One short cell: "fixture server (fixture-model)", "recorded answers (recorded-model)",
    /// "imported", or the model's name.
    QString sourceText() const;
    /// Several lines for a tooltip: source, model, endpoint, answer format, prompt set and its folder,
    /// versions and GPU.
    QString details;
    /// Each template the run used (as runs store them: "agent/generator") -> the SHA-256 of its
    /// text (hex), the hash the run stored beside it: which wording, exactly.
    QMap<QString, QString> templateHashes;
    /// The programs' versions the run recorded (RunVersions): "kwb 0.1.0 (036ecb77d146) · worker
    /// 0.1.0 · torch 2.11.0 · Qt 6.4.2", kwb's commit in parentheses (versionWithCommit; runs stored
    /// before runs kept it have none); "–" when none was.
    QString versions;
    /// The GPU its candidates were evaluated on (the worker's `device` answer): "NVIDIA H200
    /// (sm_90, CUDA driver 13.0)", "no GPU: <reason>", "–" when none was stored.
    QString gpu;

    /// The wire name of `source`: "model", "fixture_server", "recorded_server", "imported", "unknown".
    QString sourceName() const;
    /// Everything above as the JSON export's `provenance` object (docs/cli.md), the CSV's
    /// `provenance` rows are the same keys.
    QJsonObject toJson() const;
};

RunProvenance runProvenance(const RunInfo& run);

/// The templates a run used, short: the prompts folder's name and a fingerprint of the templates'
/// names and texts ("prompts · 3f9a2c1d"), so two runs read as one set only when their wording is
/// the same; "–" without stored templates.
QString promptSetName(const RunConfig& config);

/// The prompts a sample's answer came from, in the order they were sent: for each turn up to
/// `turn`, every role's prompt for that sample, and a role asked once for all samples (the notes
/// roles: analyzer, researcher, triager, critic) under the sample it was stored with. A request
/// asked again (a failure, a resume) shows each time. `taskPrompts`: RunStore::prompts of the task.
QList<PromptRecord> promptsSentFor(const QList<PromptRecord>& taskPrompts, int turn, int sample);
/// The prompts as one text to read: a header per prompt ("turn 2 · triager · template 3f9a2c1d")
/// and its whole text; "(no prompt stored)" for none.
QString promptsText(const QList<PromptRecord>& prompts);

/// A template of a set against the one a run used, by the SHA-256 of their text (what the run
/// stored beside each template's text).
enum class TemplateMatch {
    Same,         ///< the run used this wording
    Differs,      ///< the run used other wording under this name
    NotUsedByRun, ///< the run used no template of this name
    OnlyInRun,    ///< the run used a template the set does not have
};
struct TemplateComparison
{
    QString name; ///< "agent/generator", "partials/task" (as runs store them: no ".mustache")
    TemplateMatch match = TemplateMatch::Same;
};
/// Every template of the set (name -> text) and of the run, sorted by name.
QList<TemplateComparison> compareTemplates(const QMap<QString, QString>& setTexts, const RunConfig& run);

/// The banner's sentence for an open study: how many of its runs were answered by the fixture or
/// recorded server; empty when none was.
QString standInAnswersNote(const QList<RunInfo>& runs);

} // namespace kwb
