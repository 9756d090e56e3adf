#pragma once
// A run database for the runs pages' tests, written through RunStore's API: three runs over the
// same three tasks, with notes roles, several samples and turns, a failed model request, and
// statuses from correct to compile_error.
//
//   run 1, agent:                L1/1 correct (turn 1 sample 1, 1.5×), L1/2 correct on turn 2 (0.8×),
//                                L2/1 compile_error (and a failed request): 2 of 3 correct
//   run 2, zero-shot:            L1/1 correct (2.0×), L1/2 incorrect, L2/1 incorrect: 1 of 3
//   run 3, agent with best_of_n off: L1/1 correct (1.2×), L1/2 incorrect, L2/1 compile_error: 1 of 3

#include "core/config/regime.h"
#include "core/store/runstore.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QString>

#include <optional>

namespace kwb::test {

struct FixtureUnit
{
    QString task;
    int turn = 1;
    int sample = 0;
    QString role = QStringLiteral("generator");
    QString text = QStringLiteral("answer");
    QString status; ///< empty: no evaluation
    std::optional<double> speedup;
    std::optional<double> maxAbsDiff;
    QString error; ///< a failed request (no candidate)
    qint64 tokensIn = 100;
    qint64 tokensOut = 50;
    qint64 latencyMs = 2000;
};

inline QJsonObject evaluationResult(const FixtureUnit& u)
{
    const bool compiled = u.status != QLatin1String("compile_error") && u.status != QLatin1String("format_error");
    QJsonObject result{
        {QStringLiteral("status"), u.status},
        {QStringLiteral("message"),
         u.status == QLatin1String("correct") ? QString() : QStringLiteral("fixture: ") + u.status},
        {QStringLiteral("compile"),
         QJsonObject{{QStringLiteral("ok"), compiled},
                     {QStringLiteral("log"), compiled ? QString() : QStringLiteral("kernel.cu(3): error: fixture")}}}};
    if (u.speedup)
        result.insert(QStringLiteral("speedup"), *u.speedup);
    if (u.maxAbsDiff)
        result.insert(QStringLiteral("correctness"), QJsonObject{{QStringLiteral("max_abs_diff"), *u.maxAbsDiff}});
    return result;
}

/// Stores one unit: prompt, response, and (with a status) candidate and evaluation.
inline bool addUnit(RunStore& store, qint64 runId, const FixtureUnit& u)
{
    PromptRecord p;
    p.runId = runId;
    p.task = u.task;
    p.turn = u.turn;
    p.sample = u.sample;
    p.role = u.role;
    p.text = QStringLiteral("prompt for ") + u.task;
    const auto promptId = store.addPrompt(p);
    if (!promptId)
        return false;
    ResponseRecord r;
    r.promptId = *promptId;
    r.text = u.error.isEmpty() ? u.text : QString();
    r.error = u.error;
    if (u.error.isEmpty()) {
        r.tokensIn = u.tokensIn;
        r.tokensOut = u.tokensOut;
        r.latencyMs = u.latencyMs;
    }
    const auto responseId = store.addResponse(r);
    if (!responseId)
        return false;
    if (u.status.isEmpty())
        return true;
    CandidateRecord c;
    c.responseId = *responseId;
    c.task = u.task;
    c.turn = u.turn;
    c.sample = u.sample;
    c.python = QStringLiteral("def forward(x): return x");
    c.parsedOk = true;
    const auto candidateId = store.addCandidate(c);
    return candidateId && store.addEvaluation(*candidateId, evaluationResult(u)).has_value();
}

inline qint64 addRun(RunStore& store, const QString& regimeName, const Ablations& ablations = {},
                     const QString& status = RunStatus::Finished)
{
    const Regime regime = Regime::builtin(regimeName)->withAblations(ablations);
    const QJsonObject config{
        {QStringLiteral("regime"), regime.toJson()},
        {QStringLiteral("tasks"), QJsonArray{QStringLiteral("L1/1"), QStringLiteral("L1/2"), QStringLiteral("L2/1")}},
        {QStringLiteral("model"), QStringLiteral("fixture-model")}};
    const auto id = store.createRun(regimeName + QStringLiteral(" L1:1-2,L2:1"), regimeName, config);
    if (!id)
        return 0;
    store.setRunStatus(*id, status);
    return *id;
}

struct Fixture
{
    qint64 agent = 0;
    qint64 zeroShot = 0;
    qint64 ablated = 0;
};

inline std::optional<Fixture> writeFixture(RunStore& store)
{
    Fixture f;
    const auto u = [](const QString& task, int turn, int sample, const QString& role, const QString& status,
                      std::optional<double> speedup = std::nullopt) {
        FixtureUnit unit;
        unit.task = task;
        unit.turn = turn;
        unit.sample = sample;
        unit.role = role;
        unit.status = status;
        unit.speedup = speedup;
        unit.text = QStringLiteral("%1 turn %2 %3 sample %4").arg(task).arg(turn).arg(role).arg(sample);
        if (status == QLatin1String("correct") || status == QLatin1String("incorrect"))
            unit.maxAbsDiff = status == QLatin1String("correct") ? 1e-6 : 0.5;
        return unit;
    };
    const QString gen = QStringLiteral("generator");
    f.agent = addRun(store, QStringLiteral("agent"));
    f.zeroShot = addRun(store, QStringLiteral("zero-shot"));
    Ablations noBestOfN;
    noBestOfN.bestOfN = false;
    f.ablated = addRun(store, QStringLiteral("agent"), noBestOfN, RunStatus::Cancelled);
    if (!f.agent || !f.zeroShot || !f.ablated)
        return std::nullopt;

    FixtureUnit failed = u(QStringLiteral("L2/1"), 1, 1, gen, QString());
    failed.error = QStringLiteral("http: 500 the model crashed");
    const QList<QPair<qint64, FixtureUnit>> units = {
        {f.agent, u(QStringLiteral("L1/1"), 1, 0, QStringLiteral("analyzer"), QString())},
        {f.agent, u(QStringLiteral("L1/1"), 1, 0, gen, QStringLiteral("incorrect"), 0.9)},
        {f.agent, u(QStringLiteral("L1/1"), 1, 1, gen, QStringLiteral("correct"), 1.5)},
        {f.agent, u(QStringLiteral("L1/2"), 1, 0, gen, QStringLiteral("incorrect"), 1.1)},
        {f.agent, u(QStringLiteral("L1/2"), 2, 0, QStringLiteral("triager"), QString())},
        {f.agent, u(QStringLiteral("L1/2"), 2, 0, gen, QStringLiteral("correct"), 0.8)},
        {f.agent, u(QStringLiteral("L2/1"), 1, 0, gen, QStringLiteral("compile_error"))},
        {f.agent, failed},
        {f.zeroShot, u(QStringLiteral("L1/1"), 1, 0, gen, QStringLiteral("correct"), 2.0)},
        {f.zeroShot, u(QStringLiteral("L1/2"), 1, 0, gen, QStringLiteral("incorrect"), 1.0)},
        {f.zeroShot, u(QStringLiteral("L2/1"), 1, 0, gen, QStringLiteral("incorrect"), 0.5)},
        {f.ablated, u(QStringLiteral("L1/1"), 1, 0, gen, QStringLiteral("correct"), 1.2)},
        {f.ablated, u(QStringLiteral("L1/2"), 1, 0, gen, QStringLiteral("incorrect"))},
        {f.ablated, u(QStringLiteral("L2/1"), 1, 0, gen, QStringLiteral("compile_error"))},
    };
    for (const auto& [run, unit] : units)
        if (!addUnit(store, run, unit))
            return std::nullopt;
    return f;
}

} // namespace kwb::test
