// The Diff page's Kernels tab (issue 40, items 3 and 5) on what `kwb eval --json` printed for two
// L2/1 fixtures (tests/fixtures/kernelfacts: the reference answer and the wrong-result one,
// compiled for sm_90 on a machine without a GPU; README there). The table must say what the JSON
// says, highlight exactly the facts that differ in it, diff the kernels' PTX, give each side's
// one-line reading, and the Monitor's summary must carry the same reading. The screenshot is
// written to screenshots/ and checked for the highlight's colour in the table; a second one with
// the launches a GPU adds (launch as run, theoretical occupancy).

#include "app/editor/candidatediffview.h"
#include "app/editor/kernelcompareview.h"
#include "app/editor/sidebysidediffview.h"
#include "core/study/evaluationsummary.h"

#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLabel>
#include <QTableWidget>
#include <QTest>

using namespace kwb;
using namespace kwb::app;

namespace {

QByteArray readFile(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(path));
    return f.readAll();
}

/// A `kwb eval --json` output of tests/fixtures/kernelfacts.
QJsonObject evalOutput(const QString& name)
{
    return QJsonDocument::fromJson(readFile(QDir(QStringLiteral(KWB_FIXTURES_DIR "/kernelfacts")).filePath(name)))
        .object();
}

QJsonObject firstKernel(const QJsonObject& output)
{
    return output[QStringLiteral("response")][QStringLiteral("compile")][QStringLiteral("kernel_facts")][0].toObject();
}

QString cell(const QTableWidget* table, const QString& label, int column)
{
    for (int i = 0; i < table->rowCount(); ++i)
        if (table->item(i, 0)->text() == label)
            return table->item(i, column)->text();
    return QStringLiteral("(no row %1)").arg(label);
}

/// A traffic profile of one call, counted per kernel, with one kernel.
TrafficProfile countedPerKernel(const QString& kernel, double read, double written, double after, double total)
{
    KernelTraffic k;
    k.name = kernel;
    k.calls = 1;
    k.readBytes = read;
    k.writeBytes = written;
    k.writtenBackAfterBytes = after;
    TrafficProfile t;
    t.profiled = true;
    t.dramBytes = total;
    t.perKernel = {k};
    return t;
}

} // namespace

class TestKernelCompareView : public QObject
{
    Q_OBJECT

    QJsonObject m_referenceJson, m_wrongJson;
    CandidateSide m_reference, m_wrong;

private Q_SLOTS:
    void initTestCase()
    {
        m_referenceJson = evalOutput(QStringLiteral("L2_01_reference.eval.json"));
        m_wrongJson = evalOutput(QStringLiteral("L2_01_wrong_result.eval.json"));
        m_reference = CandidateSide::make(QStringLiteral("L2/1 reference"), QString(),
                                          decodeEvaluation(m_referenceJson[QStringLiteral("response")].toObject()));
        m_wrong = CandidateSide::make(QStringLiteral("L2/1 wrong_result"), QString(),
                                      decodeEvaluation(m_wrongJson[QStringLiteral("response")].toObject()));
        QVERIFY(m_reference.evaluation->compile);
        QCOMPARE(m_reference.evaluation->compile->kernelFacts.size(), 1);
        QCOMPARE(m_wrong.evaluation->compile->kernelFacts.size(), 1);
    }

    void tableSaysWhatTheJsonSays()
    {
        CandidateDiffView view;
        view.setCandidates(m_reference, m_wrong);
        KernelCompareView* kernels = view.kernelView();
        QCOMPARE(kernels->kernelNames(), QStringList{QStringLiteral("relu_bias_add")});
        QCOMPARE(kernels->currentKernel(), QStringLiteral("relu_bias_add"));
        const QTableWidget* table = kernels->factsTable();
        const QJsonObject l = firstKernel(m_referenceJson), r = firstKernel(m_wrongJson);
        const QList<std::pair<QString, QString>> facts{
            {QStringLiteral("Registers per thread"), QStringLiteral("registers")},
            {QStringLiteral("Local memory per thread"), QStringLiteral("local_bytes")},
            {QStringLiteral("Spill stores"), QStringLiteral("spill_store_bytes")},
            {QStringLiteral("Static shared memory"), QStringLiteral("static_shared_bytes")},
            {QStringLiteral("Parameters"), QStringLiteral("param_bytes")},
        };
        QStringList differInJson;
        for (const auto& [label, key] : facts) {
            const QString unit = key == QLatin1String("registers") ? QString() : QStringLiteral(" B");
            QCOMPARE(cell(table, label, 1), QString::number(l[key].toInteger()) + unit);
            QCOMPARE(cell(table, label, 2), QString::number(r[key].toInteger()) + unit);
            if (l[key] != r[key])
                differInJson << label;
        }
        QVERIFY(cell(table, QStringLiteral("Max threads per block"), 1)
                    .startsWith(QString::number(l[QStringLiteral("max_threads_per_block")].toInt())));
        // wrong_result's kernel takes a long long more: its parameters differ, whatever else does.
        QVERIFY(differInJson.contains(QStringLiteral("Parameters")));
        const QStringList differ = kernels->differingFacts();
        for (const QString& label : differInJson)
            QVERIFY2(differ.contains(label), qPrintable(label));
        for (const auto& [label, key] : facts)
            if (!differInJson.contains(label))
                QVERIFY2(!differ.contains(label), qPrintable(label));
        // only differing rows are highlighted
        for (int i = 0; i < table->rowCount(); ++i) {
            const bool highlighted = table->item(i, 1)->background().style() != Qt::NoBrush;
            QCOMPARE(highlighted, differ.contains(table->item(i, 0)->text()));
        }
        QVERIFY2(kernels->caption().contains(QStringLiteral("%1 facts differ").arg(differ.size())),
                 qPrintable(kernels->caption()));

        // Readings: what a teacher reads off, from the same facts.
        QVERIFY2(kernels->leftReading()->text().contains(
                     QStringLiteral("%1 registers").arg(l[QStringLiteral("registers")].toInt())),
                 qPrintable(kernels->leftReading()->text()));
        QVERIFY(kernels->leftReading()->text().contains(QLatin1String("no spills")));
        // The Monitor's summary of the selected candidate carries the same line.
        const QString summary = evaluationSummary(*m_reference.evaluation);
        QVERIFY2(summary.contains(QLatin1String("relu_bias_add: ") +
                                  kernelReading(m_reference.evaluation->compile->kernelFacts[0])),
                 qPrintable(summary));
    }

    // Issue 40 item 2: where a GPU ran the candidates, the table adds each kernel's launch as run
    // and its theoretical occupancy (the evaluation's `launches`), highlighted where they differ;
    // a side that was not traced says so.
    void launchesJoinTheFacts()
    {
        const auto launch = [](int block, int blocks, double fraction) {
            KernelLaunchConfig k;
            k.name = QStringLiteral("relu_bias_add");
            k.custom = true;
            k.calls = 1;
            k.timeNs = 669888;
            k.grid = {{16384, 4, 1}};
            k.block = {{block, 1, 1}};
            k.registers = 26;
            k.staticSharedBytes = 0;
            k.dynamicSharedBytes = 0;
            OccupancyInfo occupancy;
            occupancy.activeBlocksPerSm = blocks;
            occupancy.activeWarpsPerSm = blocks * block / 32;
            occupancy.maxWarpsPerSm = 64;
            occupancy.fraction = fraction;
            occupancy.limitedBy = QStringList{QStringLiteral("warps")};
            k.occupancy = occupancy;
            return k;
        };
        CandidateSide left = m_reference, right = m_wrong;
        EvaluationResult l = *left.evaluation, r = *right.evaluation;
        l.launches = {launch(256, 8, 1.0)};
        r.launches = {launch(1024, 2, 1.0)};
        left.evaluation = l;
        right.evaluation = r;
        CandidateDiffView view;
        view.setCandidates(left, right);
        KernelCompareView* kernels = view.kernelView();
        const QTableWidget* table = kernels->factsTable();
        QCOMPARE(cell(table, QStringLiteral("Launch (as run)"), 1),
                 QStringLiteral("grid 16384\u00d74\u00d71 of 256 threads"));
        QCOMPARE(cell(table, QStringLiteral("Launch (as run)"), 2),
                 QStringLiteral("grid 16384\u00d74\u00d71 of 1024 threads"));
        QCOMPARE(cell(table, QStringLiteral("Theoretical occupancy"), 1),
                 QStringLiteral("100 % (8 blocks/SM, limited by warps)"));
        QVERIFY(kernels->differingFacts().contains(QStringLiteral("Launch (as run)")));
        QVERIFY(kernels->differingFacts().contains(QStringLiteral("Theoretical occupancy")));

        // One side not traced (a CPU evaluation): said, and a difference.
        r.launches.clear();
        right.evaluation = r;
        view.setCandidates(left, right);
        QCOMPARE(cell(table, QStringLiteral("Theoretical occupancy"), 2), QStringLiteral("(not traced)"));
        // Neither traced: no launch rows at all (as before issue 40's item 2).
        l.launches.clear();
        left.evaluation = l;
        view.setCandidates(left, right);
        QCOMPARE(cell(table, QStringLiteral("Launch (as run)"), 1), QStringLiteral("(no row Launch (as run))"));

        // The picture, with the launch rows and the left's counted bytes: relu_bias_add's as the
        // H200 measured them (bench/results/2026-12-05-gpu-traffic-per-kernel-h200-session29.md);
        // the right is incorrect, and an incorrect candidate's traffic is never profiled.
        l.launches = {launch(256, 8, 1.0)};
        r.launches = {launch(1024, 2, 1.0)};
        l.traffic = countedPerKernel(QStringLiteral("relu_bias_add"), 1.053e9, 1.047e9, 1.698e7, 5.7615e9);
        left.evaluation = l;
        right.evaluation = r;
        view.resize(1440, 900);
        view.setCandidates(left, right);
        view.showBottomTab(2);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QTest::qWait(50);
        QDir().mkpath(QStringLiteral(KWB_SCREENSHOT_DIR));
        QCOMPARE(cell(table, QStringLiteral("HBM traffic (measured)"), 1),
                 QStringLiteral("1.05 GB read, 1.05 GB written + 0.017 GB written back after the call"));
        QCOMPARE(cell(table, QStringLiteral("HBM traffic (measured)"), 2), QStringLiteral("(not counted per kernel)"));
        QVERIFY(view.grab().toImage().save(
            QDir(QStringLiteral(KWB_SCREENSHOT_DIR)).filePath(QStringLiteral("kernels-tab-launches.png"))));
    }

    void measuredTrafficPerKernelIsARowAndAReportLine()
    {
        // `traffic.per_kernel` (issue 40 item 2): each side's counted bytes in the table, and the
        // evaluation report's line per kernel with its bandwidth.
        CandidateSide left = m_reference, right = m_wrong;
        EvaluationResult l = *left.evaluation, r = *right.evaluation;
        QVERIFY(l.compile && !l.compile->kernelFacts.isEmpty());
        const QString name = l.compile->kernelFacts.front().name;
        l.traffic = countedPerKernel(name, 1.04e9, 0.45e9, 0.06e9, 1.55e9);
        l.traffic->kernels = 1;
        l.kernels = {KernelLaunch{name, 1, 520000, true}};
        left.evaluation = l;
        TrafficProfile notPerKernel;
        notPerKernel.profiled = true;
        notPerKernel.dramBytes = 1.5e9;
        notPerKernel.perKernelReason = QStringLiteral("2000 kernel launches in one call");
        r.traffic = notPerKernel;
        right.evaluation = r;
        CandidateDiffView view;
        view.setCandidates(left, right);
        const QTableWidget* table = view.kernelView()->factsTable();
        QCOMPARE(cell(table, QStringLiteral("HBM traffic (measured)"), 1),
                 QStringLiteral("1.04 GB read, 0.45 GB written + 0.06 GB written back after the call"));
        QCOMPARE(cell(table, QStringLiteral("HBM traffic (measured)"), 2), QStringLiteral("(not counted per kernel)"));
        QVERIFY(view.kernelView()->differingFacts().contains(QStringLiteral("HBM traffic (measured)")));
        const QString report = CandidateSide::evaluationReport(l);
        QVERIFY2(report.contains(QStringLiteral("HBM traffic: measured 1.55 GB of HBM traffic (1 kernel)")),
                 qPrintable(report));
        QVERIFY2(report.contains(name + QStringLiteral(" (its own): 1.04 GB read, 0.45 GB written + 0.06 GB written "
                                                       "back after the call in 520 us: 2.98 TB/s")),
                 qPrintable(report));
        QVERIFY(CandidateSide::evaluationReport(r).contains(
            QStringLiteral("not counted per kernel: 2000 kernel launches in one call")));
        // Neither side counted per kernel: no row.
        l.traffic.reset();
        left.evaluation = l;
        r.traffic.reset();
        right.evaluation = r;
        view.setCandidates(left, right);
        QCOMPARE(cell(table, QStringLiteral("HBM traffic (measured)"), 1),
                 QStringLiteral("(no row HBM traffic (measured))"));
    }

    void codeIsDiffedAndMissingSassSaysWhy()
    {
        CandidateDiffView view;
        view.setCandidates(m_reference, m_wrong);
        KernelCompareView* kernels = view.kernelView();
        const QJsonObject l = firstKernel(m_referenceJson);
        if (l[QStringLiteral("sass")].isNull()) {
            // made without nvdisasm: PTX is shown, the SASS's absence is explained
            QVERIFY(!kernels->showsSass());
            kernels->setShowSass(true);
            QVERIFY2(kernels->codeCaption()->text().contains(QLatin1String("nvdisasm")),
                     qPrintable(kernels->codeCaption()->text()));
            kernels->setShowSass(false);
        }
        QVERIFY(kernels->codeCaption()->text().startsWith(QLatin1String("PTX: ")));
        const auto* diff = kernels->codeDiff();
        QVERIFY(diff->changeCount() > 0); // a different body, a different signature
        QVERIFY(kernels->codeCaption()->text().contains(QStringLiteral("%1 change").arg(diff->changeCount())));
    }

    void screenshot()
    {
        CandidateDiffView view;
        view.resize(1440, 900);
        view.setCandidates(m_reference, m_wrong);
        view.showBottomTab(2);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QTest::qWait(50);
        const QImage shot = view.grab().toImage();
        QDir().mkpath(QStringLiteral(KWB_SCREENSHOT_DIR));
        QVERIFY(shot.save(QDir(QStringLiteral(KWB_SCREENSHOT_DIR)).filePath(QStringLiteral("kernels-tab.png"))));
        // The highlighted rows are in the picture: the table's grab holds the amber of a differing fact.
        const QTableWidget* table = view.kernelView()->factsTable();
        QVERIFY(table->isVisible());
        const QImage tableShot = table->viewport()->grab().toImage();
        QColor amber;
        for (int i = 0; i < table->rowCount() && !amber.isValid(); ++i)
            if (table->item(i, 1)->background().style() != Qt::NoBrush)
                amber = table->item(i, 1)->background().color();
        QVERIFY(amber.isValid());
        int amberPixels = 0;
        for (int y = 0; y < tableShot.height(); ++y)
            for (int x = 0; x < tableShot.width(); ++x)
                amberPixels += tableShot.pixelColor(x, y) == amber;
        QVERIFY2(amberPixels > 100, qPrintable(QString::number(amberPixels)));
    }
};

QTEST_MAIN(TestKernelCompareView)
#include "tst_kernelcompareview.moc"
