#pragma once
// A run's configuration as a value: what it was made with (model, server, templates, seeds, the
// GPU and versions) and the plan it ran (regimes, tasks, scale, limits, sweep, answer format, …).
// The store keeps it as JSON in runs.config; toJson() and fromJson() here are the one place that
// writes and reads its keys (issue 34 item 3), so `kwb run`, `kwb sweep`, `kwb import`, resuming,
// the window and the report all see the same fields with the same defaults.
//
// Defaults are what a run stored before a field existed ran with: fromJson() of an older
// configuration gives the value it was made with (native answers, no token budget, turns asked
// with the same seeds, …), so readers never decide that themselves.

#include "core/config/regime.h"
#include "core/protocol/defaults.h"
#include "core/protocol/devicefacts.h"
#include "core/workers/hostlimits.h"

#include <QJsonObject>
#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>

#include <optional>

namespace kwb {

/// SHA-256 of the UTF-8 text, lowercase hex: the hash stored beside each template's text.
QString sha256Hex(const QString& text);

/// A regime as a run stored it (Regime::toJson). Reports and names look at any stored regime
/// (fields, with defaults for what it does not say); resuming needs one Regime::fromJson accepts.
struct StoredRegime
{
    Regime fields;       ///< Regime::fieldsOf: what it says, defaults for the rest
    QString error;       ///< why Regime::fromJson refuses it; empty: usable
    bool stored = false; ///< the configuration holds a non-empty regime
    /// Which fields it states: an older or hand-written regime says nothing about the others.
    struct Stated
    {
        bool n = false, turns = false, temperature = false, feedback = false, selection = false, feedbackSource = false,
             roles = false;
    } stated;

    /// The regime as the stored one, every field stated.
    static StoredRegime of(const Regime& regime);
    static StoredRegime fromJson(const QJsonObject& json);
    /// Regime::fromJson's result: the regime when usable, else nullopt with *why.
    std::optional<Regime> usable(QString* why = nullptr) const;
};

/// The seeds a run was asked with (`seeds`).
struct RunSeeds
{
    std::optional<qint64> evaluation; ///< the worker's input and weight draws
    std::optional<qint64> model;      ///< the model's base seed; unset: the model client's
    /// modelSeedFor's distance between turns; 0 in runs stored before per-turn seeds, which asked
    /// every turn with the same seeds.
    qint64 turnStride = 0;
    /// The fallback regime's temperature, kept here too so a reader of seeds sees it.
    std::optional<double> temperature;

    friend bool operator==(const RunSeeds& a, const RunSeeds& b)
    {
        return a.evaluation == b.evaluation && a.model == b.model && a.turnStride == b.turnStride &&
               a.temperature == b.temperature;
    }
    friend bool operator!=(const RunSeeds& a, const RunSeeds& b) { return !(a == b); }
};

/// The versions of the programs a run was made with (`versions`); empty: not recorded.
struct RunVersions
{
    QString kwb, qt, worker, torch, driver;
    QString kwbCommit; ///< kwbCommit() of the program that made the run; empty in runs stored before it was kept
    std::optional<int> protocol;
};

/// A run's place in a `kwb sweep` (`sweep`).
struct RunSweep
{
    QList<int> ns; ///< every n of the sweep
    QString id;    ///< the id its runs share; empty in the old single-run sweeps
    int n = 0;     ///< this run's n
};

struct RunConfig
{
    QString model;
    QString endpoint;
    QMap<QString, QString> templates; ///< template name (e.g. "agent/analyzer") -> its text
    RunSeeds seeds;
    QString protocolProfile; ///< "kernelbench", …; empty: not recorded
    DeviceFacts gpu;         ///< the worker's `device` answer (stored whole: gpu.raw)
    RunVersions versions;

    StoredRegime regime;                  ///< tasks whose level has none of its own (routing: the fallback)
    QMap<int, StoredRegime> levelRegimes; ///< routing: level -> its regime
    std::optional<Routing> routing;
    QStringList tasks;                               ///< the task ids the run was asked to do, in order
    QString taskSpec;                                ///< as the user wrote it; empty: not stored
    QString scale;                                   ///< empty: not stored (defaults::scale())
    double timeoutS = defaults::kEvaluationTimeoutS; ///< an evaluation's wall-clock limit
    std::optional<double> modelTimeoutS;             ///< a model request's total limit; unset: not stored
    int timingTrials = 0;                            ///< 0: the profile's
    QString isolation = QStringLiteral("fresh");
    WorkerLimits workerLimits;
    QString sandbox;      ///< "bubblewrap" or "none: <reason>" (workerSandboxStatus)
    QString memoryCgroup; ///< local workers' memory cgroups: "cgroup v2, in …" or "none: <reason>"
                          ///< (memoryCgroupStatus); empty in older runs
    std::optional<RunSweep> sweep;
    QString promptsDir;
    QString answerFormat = defaults::answerFormat(); ///< runs stored before it were native
    bool compileOnly = false;
    bool profileTraffic = false;
    /// Identical answers of a task evaluated once (RunController::setEvaluateIdenticalOnce);
    /// runs stored before it evaluated every one.
    bool evaluateIdenticalOnce = false;
    /// With it, verdicts of the store's other runs of the same evaluation settings reused too
    /// (RunController::setIdenticalAcrossRuns); runs stored before it did not.
    bool identicalAcrossRuns = false;
    /// No new model request while an evaluation holds a GPU; unset: not stored (planResume
    /// decides from the endpoint).
    std::optional<bool> pauseGenerationWhileTiming;
    int contextTokens = 0;             ///< 0: prompts were not checked against a context (runs before the budget)
    int maxOutputTokens = 0;           ///< 0: max_tokens was not sent
    std::optional<int> compileWorkers; ///< how it was run (issue 14); unset: not recorded
    /// Evaluations at once per local GPU (EvaluationQueue::setEvaluationsPerGpu), how it was run;
    /// unset: one (runs before it, and runs that kept the default).
    std::optional<int> evaluationsPerGpu;
    /// What `kwb import` brought in and from where (format, folders, files, skipped, recorded
    /// verdicts), kept as the import wrote it: a record of provenance that nothing reads back but
    /// its presence. Empty: the run was generated.
    QJsonObject import;

    bool isImport() const { return !import.isEmpty(); }
    /// Whether a verdict of one run holds for the byte-identical answer of the same task in the
    /// other: the same evaluation request (profile, scale, timing trials, evaluation seed, answer
    /// format, compile-only, traffic), the same limits and sandbox (a timeout, a resource limit),
    /// the same build of kwb and its worker (kwb_commit, known), torch, and the same GPU (name,
    /// arch, SMs, driver). Not the model, endpoint, prompts or regime: they decide the answer, not
    /// its verdict.
    static bool sameEvaluationSettings(const RunConfig& a, const RunConfig& b);
    bool isSweep() const { return sweep.has_value(); }
    /// Routed: by a routing, or with regimes per level.
    bool isRouted() const { return routing.has_value() || !levelRegimes.isEmpty(); }

    /// What the store keeps in runs.config; each template with its text and the SHA-256 of that
    /// text (UTF-8), so a report can tell two runs made with different wording apart. An imported
    /// run keeps only what an import has (no model settings, worker limits or sweep).
    QJsonObject toJson() const;
    static RunConfig fromJson(const QJsonObject& json);
};

} // namespace kwb
