// The evaluation in words (src/core/study/evaluationsummary.h): an all-NaN output never reads
// "max |diff| 0", a passing output's huge relative difference is explained by the tolerance
// rule with its numbers, an evaluation below the roofline floor says it is not counted and why,
// each compiled kernel's facts (issue 40) are decoded and read in a line.

#include "core/study/evaluationsummary.h"
#include "core/tasks/kernelbound.h"

#include <QJsonArray>
#include <QTest>

using namespace kwb;

namespace {

QJsonObject correctness(int passed, double maxAbs, double maxRel, QJsonValue failure = QJsonValue::Null)
{
    return QJsonObject{{QStringLiteral("trials"), 5},
                       {QStringLiteral("passed"), passed},
                       {QStringLiteral("max_abs_diff"), maxAbs},
                       {QStringLiteral("max_rel_diff"), maxRel},
                       {QStringLiteral("atol"), 1e-4},
                       {QStringLiteral("rtol"), 1e-4},
                       {QStringLiteral("deterministic"), true},
                       {QStringLiteral("failure"), failure}};
}

} // namespace

class TestEvaluationSummary : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void allNanOutputIsNotAZeroDiff()
    {
        // What the worker sends for an output that is NaN everywhere: the difference over the
        // finite elements (none) is 0, the failure names the non-finite count.
        const QJsonObject failure{
            {QStringLiteral("trial"), 0},
            {QStringLiteral("reason"),
             QStringLiteral(
                 "4096 output elements are NaN or Inf where the reference is finite (first at flat index 0)")},
            {QStringLiteral("detail"),
             QJsonObject{{QStringLiteral("non_finite"), 4096}, {QStringLiteral("first_index"), 0}}}};
        const EvaluationResult e =
            decodeEvaluation(QJsonObject{{QStringLiteral("status"), QStringLiteral("incorrect")},
                                         {QStringLiteral("stage"), QStringLiteral("correctness")},
                                         {QStringLiteral("correctness"), correctness(0, 0.0, 0.0, failure)}});
        QCOMPARE(nonFiniteOutputs(e), qint64(4096));
        QCOMPARE(maxAbsDiffText(e), QStringLiteral("NaN/Inf"));
        const QString text = evaluationSummary(e);
        QVERIFY2(!text.contains(QStringLiteral("Max |diff| 0")), qPrintable(text));
        QVERIFY(text.contains(QStringLiteral("Max |diff|: not a number: 4096 output elements are NaN or Inf")));
        QVERIFY(text.contains(QStringLiteral("Status: incorrect (at correctness)")));
    }

    void finiteDiffIsTheNumber()
    {
        const EvaluationResult e =
            decodeEvaluation(QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")},
                                         {QStringLiteral("correctness"), correctness(5, 1.2e-6, 3e-7)}});
        QCOMPARE(maxAbsDiffText(e), QStringLiteral("1.2e-06"));
        const QString text = evaluationSummary(e);
        QVERIFY(text.contains(QStringLiteral("Max |diff| 1.2e-06 (atol 0.0001), max rel diff 3e-07 (rtol 0.0001)")));
        QVERIFY(!text.contains(QStringLiteral("near 0"))); // nothing to explain
    }

    void hugeRelativeDiffOnAPassIsExplainedByTheTolerance()
    {
        const EvaluationResult e =
            decodeEvaluation(QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")},
                                         {QStringLiteral("speedup"), 1.07},
                                         {QStringLiteral("correctness"), correctness(5, 8e-5, 2.98e4)}});
        const QString text = evaluationSummary(e);
        QVERIFY2(text.contains(QStringLiteral("max rel diff 2.98e+04 (rtol 0.0001)")), qPrintable(text));
        QVERIFY(text.contains(QStringLiteral("|out − ref| ≤ atol + rtol·|ref| (atol 0.0001, rtol 0.0001)")));
        QVERIFY(text.contains(QStringLiteral("reference is near 0")));
        QVERIFY(text.contains(QStringLiteral("Speed-up: 1.07×")));
    }

    void belowTheRooflineFloorIsNotCounted()
    {
        const QJsonObject roof{{QStringLiteral("floor_ms"), 2.1},
                               {QStringLiteral("candidate_ms"), 0.133},
                               {QStringLiteral("margin"), 0.1},
                               {QStringLiteral("below_floor"), true}};
        const EvaluationResult e =
            decodeEvaluation(QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")},
                                         {QStringLiteral("speedup"), 20.6},
                                         {QStringLiteral("correctness"), correctness(5, 0.0, 0.0)},
                                         {QStringLiteral("flags"), QJsonArray{QStringLiteral("below_roofline_floor"),
                                                                              QStringLiteral("speedup_over_10x")}},
                                         {QStringLiteral("roofline"), roof}});
        const QStringList reasons = notCountedReasons(e);
        QCOMPARE(reasons.size(), 1);
        // the one sentence of notCountedReason(), also the prompt's not_counted and the report's
        QCOMPARE(reasons.first(), QStringLiteral("not counted: ") + notCountedReason(e));
        QVERIFY2(reasons.first().contains(
                     QStringLiteral("measured 0.133 ms is below the roofline floor 2.1 ms (less the 10 % margin")),
                 qPrintable(reasons.first()));
        const QString text = evaluationSummary(e);
        QVERIFY(text.startsWith(QStringLiteral("Status: correct, not counted")));
        QVERIFY(text.contains(QStringLiteral("speedup_over_10x: KernelBench's warning")));
        // An honest evaluation counts: no reason.
        QVERIFY(notCountedReasons(decodeEvaluation(QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")}}))
                    .isEmpty());
    }

    void kernelFactsAreDecodedAndRead()
    {
        // compile.kernel_facts as the worker writes it (docs/protocol.md §evaluate): a kernel that
        // spills, another whose block is bounded by __launch_bounds__, a note on what was not read.
        const QJsonObject spills{{QStringLiteral("name"), QStringLiteral("_Z4heavyPKfPf")},
                                 {QStringLiteral("demangled"), QStringLiteral("heavy(float const*, float*)")},
                                 {QStringLiteral("arch"), QStringLiteral("sm_90")},
                                 {QStringLiteral("registers"), 24},
                                 {QStringLiteral("local_bytes"), 152},
                                 {QStringLiteral("spill_store_bytes"), 120},
                                 {QStringLiteral("spill_load_bytes"), 96},
                                 {QStringLiteral("static_shared_bytes"), 0},
                                 {QStringLiteral("max_threads_per_block"), 1024},
                                 {QStringLiteral("max_threads_limit"), QStringLiteral("hardware")},
                                 {QStringLiteral("ptx"), QJsonValue::Null},
                                 {QStringLiteral("sass"), QStringLiteral("LDG.E R2, desc[UR4][R2.64] ;\n")}};
        const QJsonObject bounded{{QStringLiteral("name"), QStringLiteral("tile")},
                                  {QStringLiteral("registers"), 40},
                                  {QStringLiteral("local_bytes"), 0},
                                  {QStringLiteral("static_shared_bytes"), 4096},
                                  {QStringLiteral("max_threads_per_block"), 128},
                                  {QStringLiteral("max_threads_limit"), QStringLiteral("launch_bounds")},
                                  {QStringLiteral("sass"), QJsonValue::Null},
                                  {QStringLiteral("sass_note"), QStringLiteral("no nvdisasm")}};
        const EvaluationResult e = decodeEvaluation(QJsonObject{
            {QStringLiteral("status"), QStringLiteral("no_device")},
            {QStringLiteral("compile"), QJsonObject{{QStringLiteral("ok"), true},
                                                    {QStringLiteral("kernel_facts"), QJsonArray{spills, bounded}},
                                                    {QStringLiteral("kernel_facts_note"),
                                                     QStringLiteral("ext: a cubin for sm_90 compressed with zstd")}}}});
        QVERIFY(e.compile);
        const QList<KernelFactsInfo>& k = e.compile->kernelFacts;
        QCOMPARE(k.size(), 2);
        QCOMPARE(k[0].displayName(), QStringLiteral("heavy(float const*, float*)"));
        QCOMPARE(k[0].spillStoreBytes, std::optional<qint64>(120));
        QVERIFY(!k[0].ptx);
        QCOMPARE(*k[0].sass, QStringLiteral("LDG.E R2, desc[UR4][R2.64] ;\n"));
        QCOMPARE(k[1].displayName(), QStringLiteral("tile"));
        QVERIFY(!k[1].spillStoreBytes); // an extension's: ptxas said nothing
        QCOMPARE(k[1].sassNote, QStringLiteral("no nvdisasm"));
        QCOMPARE(kernelReading(k[0]),
                 QStringLiteral("24 registers, 120 B spilled per thread (stores 120 B, loads 96 B), "
                                "32 B of local arrays per thread; blocks of up to 1024 threads"));
        QCOMPARE(kernelReading(k[1]), QStringLiteral("40 registers, 4096 B static shared; blocks of up to 128 threads "
                                                     "(__launch_bounds__)"));
        const QList<KernelFactRow> rows = kernelFactRows(k[1]);
        QCOMPARE(rows.size(), kernelFactLabels().size());
        QCOMPARE(rows[2].value, QStringLiteral("\u2014")); // spill stores unknown, not 0
        const QString text = evaluationSummary(e);
        QVERIFY2(text.contains(QStringLiteral("  heavy(float const*, float*): 24 registers, 120 B spilled")),
                 qPrintable(text));
        QVERIFY(text.contains(QStringLiteral("Kernel facts: ext: a cubin for sm_90 compressed with zstd")));
        // an evaluation without facts (an older worker) says nothing of kernels
        QVERIFY(!evaluationSummary(decodeEvaluation(QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")}}))
                     .contains(QLatin1String("Kernels")));
    }

    // issue 40 item 2: each launch as the GPU ran it, with its occupancy, the longest first; none
    // where the evaluation has no trace.
    void launchesAreRead()
    {
        const auto launch = [](const QString& name, bool own, int block, int blocks, double fraction) {
            return QJsonObject{{QStringLiteral("name"), name},
                               {QStringLiteral("custom"), own},
                               {QStringLiteral("calls"), 2},
                               {QStringLiteral("time_ns"), 1.5e6},
                               {QStringLiteral("grid"), QJsonArray{128, 4, 1}},
                               {QStringLiteral("block"), QJsonArray{block, 1, 1}},
                               {QStringLiteral("registers"), 40},
                               {QStringLiteral("static_shared_bytes"), 4096},
                               {QStringLiteral("dynamic_shared_bytes"), 0},
                               {QStringLiteral("occupancy"),
                                QJsonObject{{QStringLiteral("active_blocks_per_sm"), blocks},
                                            {QStringLiteral("active_warps_per_sm"), blocks * block / 32},
                                            {QStringLiteral("max_warps_per_sm"), 64},
                                            {QStringLiteral("fraction"), fraction},
                                            {QStringLiteral("limited_by"), QJsonArray{QStringLiteral("registers")}}}}};
        };
        QJsonArray launches{launch(QStringLiteral("heavy"), true, 256, 6, 0.75)};
        for (int i = 0; i < 9; ++i)
            launches.append(
                launch(QStringLiteral("lib_%1_").arg(i) + QString(80, QLatin1Char('x')), false, 128, 4, 0.25));
        const EvaluationResult e = decodeEvaluation(QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")},
                                                                {QStringLiteral("launches"), launches},
                                                                {QStringLiteral("launches_omitted"), 2}});
        const QString text = evaluationSummary(e);
        QVERIFY2(
            text.contains(QStringLiteral("Launches (the trace of one call, the longest first):\n  heavy (its own): "
                                         "grid 128\u00d74\u00d71 of 256 threads, 40 registers, 4 KiB shared: 75 % "
                                         "theoretical occupancy, 6 blocks per SM (limited by registers); 2 calls, "
                                         "1.500 ms")),
            qPrintable(text));
        QVERIFY2(text.contains(QStringLiteral("  lib_0_xxx")), qPrintable(text));
        QVERIFY2(!text.contains(QString(80, QLatin1Char('x'))), qPrintable(text));        // long names cut
        QVERIFY2(text.contains(QStringLiteral("  \u2026 and 4 more")), qPrintable(text)); // 10 − 8 shown + 2 omitted
        QVERIFY(!evaluationSummary(decodeEvaluation(QJsonObject{{QStringLiteral("status"), QStringLiteral("correct")}}))
                     .contains(QLatin1String("Launches")));
    }
};

QTEST_GUILESS_MAIN(TestEvaluationSummary)
#include "tst_evaluationsummary.moc"
