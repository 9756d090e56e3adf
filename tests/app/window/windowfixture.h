#pragma once
// A run database for the window's tests, written through RunStore: two runs on the H200 (the
// device response of tests/app/charts/data), tasks L1/1 and L2/1, with timings, a failing and a
// correct candidate per task, and first-turn samples for a best-of-n curve.

#include "core/store/runstore.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QString>

namespace kwb::test {

inline QJsonObject h200Device()
{
    QFile f(QStringLiteral(KWB_CHARTS_TEST_DATA "/device_h200.json"));
    f.open(QIODevice::ReadOnly);
    return QJsonDocument::fromJson(f.readAll()).object();
}

struct WindowFixture
{
    qint64 agent = 0;
    qint64 zeroShot = 0;
};

/// status, reference and candidate mean ms, custom launches. As the worker answers: a correct
/// candidate has passed every correctness trial and is timed (its speed-up with a ±0.4 % interval);
/// an incorrect one stopped at correctness (its max |diff|, no timing); a compile error has neither.
inline qint64 addCandidate(RunStore& store, qint64 run, const QString& task, int turn, int sample,
                           const QString& status, double refMs, double candMs, int customLaunches, const QString& cuda,
                           const QJsonObject& extra = {})
{
    PromptRecord prompt{0, run, task, turn, sample, QStringLiteral("generator"), QStringLiteral("write it"), QString()};
    const qint64 promptId = store.addPrompt(prompt).value_or(0);
    ResponseRecord response;
    response.promptId = promptId;
    response.text = QStringLiteral("```cuda\n%1\n```").arg(cuda);
    response.tokensIn = 900;
    response.tokensOut = 300;
    response.latencyMs = 1200;
    const qint64 responseId = store.addResponse(response).value_or(0);
    CandidateRecord c;
    c.responseId = responseId;
    c.task = task;
    c.turn = turn;
    c.sample = sample;
    const qint64 candidateId = store.addCandidate(c).value_or(0);
    // The blocks come from the worker's echo, as in a real run (the store fills the candidate).
    const QJsonObject echo{
        {QStringLiteral("cuda"), cuda},
        {QStringLiteral("python"),
         QStringLiteral("def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n    return x\n")},
        {QStringLiteral("kernels"), QJsonArray{QStringLiteral("bias_relu")}},
        {QStringLiteral("source_hash"), QStringLiteral("%1").arg(qHash(cuda), 16, 16, QLatin1Char('0'))},
        {QStringLiteral("cuda_line"), 2},
        {QStringLiteral("python_line"), QJsonValue::Null}};
    QJsonObject result{
        {QStringLiteral("status"), status},
        {QStringLiteral("candidate"), echo},
        {QStringLiteral("custom_launches"), customLaunches},
        {QStringLiteral("compile"),
         QJsonObject{{QStringLiteral("ok"), status != QLatin1String("compile_error")},
                     {QStringLiteral("log"),
                      status == QLatin1String("compile_error") ? QStringLiteral("error: expected ';'") : QString()}}}};
    const bool correct = status == QLatin1String("correct"), incorrect = status == QLatin1String("incorrect");
    if (correct || incorrect) {
        // max |diff| from the times, so each candidate has its own: ~1e-6 when correct, far beyond atol when not.
        const double diff = correct ? 1e-6 * refMs : 0.1 * candMs;
        QJsonObject correctness{
            {QStringLiteral("trials"), 5},          {QStringLiteral("passed"), correct ? 5 : 0},
            {QStringLiteral("atol"), 1e-4},         {QStringLiteral("rtol"), 1e-4},
            {QStringLiteral("max_abs_diff"), diff}, {QStringLiteral("max_rel_diff"), correct ? 2e-5 : 3.7}};
        if (incorrect) {
            correctness.insert(
                QStringLiteral("failure"),
                QJsonObject{{QStringLiteral("trial"), 0},
                            {QStringLiteral("reason"), QStringLiteral("outputs differ beyond atol/rtol")}});
            result.insert(QStringLiteral("message"), QStringLiteral("trial 1: outputs differ beyond atol/rtol"));
        }
        result.insert(QStringLiteral("correctness"), correctness);
    }
    if (correct && refMs > 0 && candMs > 0) {
        const double speedup = refMs / candMs;
        result.insert(
            QStringLiteral("timing"),
            QJsonObject{{QStringLiteral("method"), QStringLiteral("adaptive")},
                        {QStringLiteral("stop_reason"), QStringLiteral("target_reached")},
                        {QStringLiteral("samples"), 12},
                        {QStringLiteral("reference"),
                         QJsonObject{{QStringLiteral("mean_ms"), refMs}, {QStringLiteral("trials"), 12}}},
                        {QStringLiteral("candidate"),
                         QJsonObject{{QStringLiteral("mean_ms"), candMs}, {QStringLiteral("trials"), 12}}},
                        {QStringLiteral("speedup_interval"), QJsonObject{{QStringLiteral("value"), speedup},
                                                                         {QStringLiteral("low"), speedup * 0.996},
                                                                         {QStringLiteral("high"), speedup * 1.004},
                                                                         {QStringLiteral("level"), 0.95},
                                                                         {QStringLiteral("relative_half_width"), 0.004},
                                                                         {QStringLiteral("samples"), 12}}}});
        result.insert(QStringLiteral("speedup"), speedup);
    }
    for (auto it = extra.begin(); it != extra.end(); ++it) // flags, kernels, roofline, …
        result.insert(it.key(), it.value());
    return store.addEvaluation(candidateId, result).value_or(0);
}

inline WindowFixture writeWindowFixture(RunStore& store)
{
    WindowFixture f;
    const QJsonObject gpu = h200Device();
    const auto config = [&](const QString& regime, int n) {
        return QJsonObject{{QStringLiteral("gpu"), gpu},
                           {QStringLiteral("regime"), QJsonObject{{QStringLiteral("name"), regime},
                                                                  {QStringLiteral("n"), n},
                                                                  {QStringLiteral("ablated"), QJsonArray()}}}};
    };
    f.zeroShot =
        store
            .createRun(QStringLiteral("zero-shot"), QStringLiteral("zero-shot"), config(QStringLiteral("zero-shot"), 1))
            .value_or(0);
    f.agent = store.createRun(QStringLiteral("agent"), QStringLiteral("agent"), config(QStringLiteral("agent"), 4))
                  .value_or(0);
    const QString good = QStringLiteral(
        "extern \"C\" __global__ void bias_relu(float* y, const float* b, int n)\n{\n"
        "    int i = blockIdx.x * blockDim.x + threadIdx.x;\n    if (i < n) y[i] = fmaxf(y[i] + b[i % 16], 0.f);\n}");
    const QString bad = QStringLiteral("extern \"C\" __global__ void bias_relu(float* y, const float* b, int n)\n{\n"
                                       "    int i = blockIdx.x * blockDim.x + threadIdx.x\n    y[i] = y[i] + b[i];\n}");
    addCandidate(store, f.zeroShot, QStringLiteral("L1/1"), 1, 0, QStringLiteral("correct"), 2.68, 2.68, 0, QString());
    addCandidate(store, f.zeroShot, QStringLiteral("L2/1"), 1, 0, QStringLiteral("compile_error"), 0, 0, 1, bad);
    // agent: 4 samples per task in turn 1.
    addCandidate(store, f.agent, QStringLiteral("L1/1"), 1, 0, QStringLiteral("incorrect"), 2.68, 2.9, 1, bad);
    addCandidate(store, f.agent, QStringLiteral("L1/1"), 1, 1, QStringLiteral("correct"), 2.66, 2.67, 0, QString());
    addCandidate(store, f.agent, QStringLiteral("L1/1"), 1, 2, QStringLiteral("incorrect"), 2.67, 3.0, 1, bad);
    addCandidate(store, f.agent, QStringLiteral("L1/1"), 1, 3, QStringLiteral("correct"), 2.67, 2.65, 0, QString());
    addCandidate(store, f.agent, QStringLiteral("L2/1"), 1, 0, QStringLiteral("compile_error"), 0, 0, 1, bad);
    addCandidate(store, f.agent, QStringLiteral("L2/1"), 1, 1, QStringLiteral("correct"), 9.12, 8.51, 1, good);
    addCandidate(store, f.agent, QStringLiteral("L2/1"), 1, 2, QStringLiteral("correct"), 9.10, 8.70, 1, good);
    addCandidate(store, f.agent, QStringLiteral("L2/1"), 1, 3, QStringLiteral("incorrect"), 9.11, 8.60, 1, bad);
    store.setRunStatus(f.zeroShot, RunStatus::Finished);
    store.setRunStatus(f.agent, RunStatus::Finished);
    return f;
}

} // namespace kwb::test
