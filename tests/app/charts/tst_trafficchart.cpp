// The fused-against-unfused traffic chart on real `analyze` responses, with and without a
// measured `profile`.
#include "chartstestdata.h"

#include "app/charts/trafficchart.h"

#include <QHelpEvent>
#include <QImage>
#include <QJsonArray>
#include <QScrollArea>
#include <QScrollBar>
#include <QTest>
#include <QToolTip>

#include <cmath>

using namespace kwb::app;

class TestTrafficChart : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void breakdownOfL2_1()
    {
        const QJsonObject analyze = loadChartData(QStringLiteral("analyze_L2_1.json"));
        const TrafficBreakdown b = trafficBreakdown(kwb::decodeAnalyze(analyze));
        QVERIFY2(b.isValid(), qPrintable(b.error));
        QCOMPARE(b.task, QStringLiteral("L2/1"));
        QCOMPARE(b.ops.size(), 3);
        QCOMPARE(b.zeroByteOps, 0);

        // The response's own totals, and the ops add up to bytes_unfused.
        QCOMPARE(b.unfusedBytes, qint64(5739414528));
        QCOMPARE(b.fusedBytes, qint64(1577616384));
        qint64 sum = 0;
        for (const TrafficOp& op : b.ops) {
            sum += op.bytes;
            QCOMPARE(op.readBytes + op.writeBytes, op.bytes);
        }
        QCOMPARE(sum, b.unfusedBytes);
        QVERIFY(std::fabs(b.ratio() - 5739414528.0 / 1577616384.0) < 1e-12);

        // conv2d reads x (128×64×128×128), the weight and the bias, and writes 128×128×126×126,
        // all fp32.
        const TrafficOp& conv = b.ops.at(0);
        QCOMPARE(conv.shortName(), QStringLiteral("conv2d"));
        QCOMPARE(conv.category, QStringLiteral("conv"));
        QCOMPARE(conv.writeBytes, qint64(4) * 128 * 128 * 126 * 126);
        QCOMPARE(conv.readBytes, qint64(4) * (128 * 64 * 128 * 128 + 128 * 64 * 3 * 3 + 128));
        // relu reads and writes the same tensor.
        QCOMPARE(b.ops.at(1).readBytes, b.ops.at(1).writeBytes);

        // Fused: the task's input and parameters once, the output once.
        QCOMPARE(b.fusedReadBytes, qint64(536870912 + 295936));
        QCOMPARE(b.fusedWriteBytes, qint64(1040449536));
        QCOMPARE(b.fusedReadBytes + b.fusedWriteBytes, b.fusedBytes);
    }

    void breakdownOfLongerChains()
    {
        for (const char* name : {"analyze_L2_2.json", "analyze_L3_10.json"}) {
            const QJsonObject analyze = loadChartData(QLatin1String(name));
            const TrafficBreakdown b = trafficBreakdown(kwb::decodeAnalyze(analyze));
            QVERIFY2(b.isValid(), qPrintable(b.error));
            qint64 sum = 0;
            for (const TrafficOp& op : b.ops)
                sum += op.bytes;
            QCOMPARE(sum, qint64(std::llround(analyze.value(QStringLiteral("bytes_unfused")).toDouble())));
            QCOMPARE(b.fusedBytes, qint64(std::llround(analyze.value(QStringLiteral("bytes_fused")).toDouble())));
            QCOMPARE(b.ops.size() + b.zeroByteOps, analyze.value(QStringLiteral("ops")).toArray().size());
            QCOMPARE(b.fusedReadBytes + b.fusedWriteBytes, b.fusedBytes);
        }
        QCOMPARE(trafficBreakdown(kwb::decodeAnalyze(loadChartData(QStringLiteral("analyze_L2_2.json")))).ops.size(),
                 6);
    }

    void badResponses()
    {
        QVERIFY(trafficBreakdown(kwb::decodeAnalyze(QJsonObject{})).error.contains(QLatin1String("no op list")));
        const QJsonObject failed{
            {QStringLiteral("ok"), false},
            {QStringLiteral("error"), QJsonObject{{QStringLiteral("code"), QStringLiteral("task_error")},
                                                  {QStringLiteral("message"), QStringLiteral("boom")}}}};
        QVERIFY(trafficBreakdown(kwb::decodeAnalyze(failed)).error.contains(QLatin1String("boom")));
        // Ops that do not add up to bytes_unfused: refuse rather than draw wrong totals.
        QJsonObject wrong = loadChartData(QStringLiteral("analyze_L2_1.json"));
        wrong.insert(QStringLiteral("bytes_unfused"), 1.0);
        QVERIFY(trafficBreakdown(kwb::decodeAnalyze(wrong)).error.contains(QLatin1String("add up")));

        TrafficChart chart;
        QVERIFY(chart.emptyText().contains(QLatin1String("No task analysed")));
        chart.setAnalysis(kwb::decodeAnalyze(wrong));
        QVERIFY(chart.emptyText().contains(QLatin1String("L2/1")));
        QVERIFY(chart.summaryText().isEmpty());
    }

    void summaryShowsTotalsAndRatio()
    {
        TrafficChart chart;
        chart.setAnalysis(kwb::decodeAnalyze(loadChartData(QStringLiteral("analyze_L2_1.json"))));
        QVERIFY(chart.emptyText().isEmpty());
        const QString s = chart.summaryText();
        QVERIFY2(s.contains(QLatin1String("unfused 5.74 GB")), qPrintable(s));
        QVERIFY(s.contains(QLatin1String("one kernel 1.58 GB")));
        QVERIFY2(s.contains(QLatin1String("library + epilogue 3.66 GB")), qPrintable(s));
        QVERIFY(s.contains(QStringLiteral("3.64×")));
        QCOMPARE(chart.objectName(), QStringLiteral("traffic-L2_1"));

        const QString conv = chart.opToolTip(0);
        QVERIFY2(conv.contains(QLatin1String("aten::conv2d")), qPrintable(conv));
        QVERIFY(conv.contains(QStringLiteral("reads 537 MB (128×64×128×128, 128×64×3×3, 128)")));
        QVERIFY(conv.contains(QStringLiteral("writes 1.04 GB (128×128×126×126)")));
        const QString fused = chart.opToolTip(-1);
        QVERIFY2(fused.contains(QLatin1String("reads 537 MB")), qPrintable(fused));
        QVERIFY(fused.contains(QLatin1String("writes 1.04 GB")));
        QVERIFY(fused.contains(QStringLiteral("3.64× less")));
        QVERIFY(!chart.hasMeasured());
        QVERIFY(!chart.impliedBytes(0));
    }

    void measuredProfile()
    {
        TrafficChart chart;
        chart.setAnalysis(kwb::decodeAnalyze(loadChartData(QStringLiteral("analyze_L2_1.json"))));
        const double bandwidth = 4265.890857861522; // the H200's measured copy bandwidth
        chart.setMeasured(kwb::decodeProfile(loadChartData(QStringLiteral("profile_L2_1.json"))), bandwidth,
                          QStringLiteral("measured copy"));
        QVERIFY(chart.hasMeasured());
        const TrafficBreakdown& b = chart.breakdown();
        QCOMPARE(*b.ops.at(0).measuredNs, 7886477.0);
        QCOMPARE(b.ops.at(0).kernels, 2);
        QCOMPARE(*b.ops.at(1).measuredNs, 489041.0);
        QCOMPARE(*b.ops.at(2).measuredNs, 810511.0);
        QCOMPARE(chart.unmatchedMeasuredNs(), 0.0);

        // relu's time at the copy bandwidth moves what it reads and writes: it runs at the roof.
        const double relu = *chart.impliedBytes(1);
        QVERIFY(std::fabs(relu - 489041.0 * bandwidth) < 1.0);
        QVERIFY(std::fabs(relu / static_cast<double>(b.ops.at(1).bytes) - 1.0) < 0.01);
        QVERIFY2(chart.opToolTip(1).contains(QLatin1String("near the memory roof")), qPrintable(chart.opToolTip(1)));
        // The convolution's time is 16× what its traffic needs: compute.
        QVERIFY(chart.opToolTip(0).contains(QLatin1String("not explained by HBM traffic")));
        QVERIFY(chart.opToolTip(0).contains(QLatin1String("7.89 ms (2 kernels)")));
        QVERIFY2(chart.summaryText().contains(QLatin1String("measured: 9.19 ms")), qPrintable(chart.summaryText()));

        // A new analysis drops the measurement; an empty profile clears it.
        chart.setAnalysis(kwb::decodeAnalyze(loadChartData(QStringLiteral("analyze_L2_1.json"))));
        QVERIFY(!chart.hasMeasured());
        chart.setMeasured(kwb::ProfileResult{}, bandwidth, QStringLiteral("measured copy"));
        QVERIFY(!chart.hasMeasured());
    }

    void profileOpsMatchByNameWhenIndicesDiffer()
    {
        TrafficChart chart;
        chart.setAnalysis(kwb::decodeAnalyze(loadChartData(QStringLiteral("analyze_L2_1.json"))));
        // A profile whose op numbering is shifted by one (an extra op before the forward's) and
        // with a kernel launched outside any op.
        auto op = [](int index, const char* name, double ns) {
            return QJsonObject{{QStringLiteral("index"), index},
                               {QStringLiteral("op"), QLatin1String(name)},
                               {QStringLiteral("time_ns"), ns},
                               {QStringLiteral("kernels"), 1}};
        };
        const QJsonObject profile{
            {QStringLiteral("ops"), QJsonArray{op(1, "aten::conv2d", 1000.0), op(3, "aten::add", 300.0),
                                               op(2, "aten::relu", 200.0), op(-1, "(no op)", 50.0)}}};
        chart.setMeasured(kwb::decodeProfile(profile), 1000.0, QStringLiteral("theoretical"));
        const TrafficBreakdown& b = chart.breakdown();
        QCOMPARE(*b.ops.at(0).measuredNs, 1000.0);
        QCOMPARE(*b.ops.at(1).measuredNs, 200.0);
        QCOMPARE(*b.ops.at(2).measuredNs, 300.0);
        QCOMPARE(chart.unmatchedMeasuredNs(), 50.0);
        QCOMPARE(*chart.impliedBytes(1), 200.0 * 1000.0);
    }

    void hoverNamesEachColumn()
    {
        // Sweep the mouse across the chart: the tooltips name the ops left to right, then the
        // fused kernel.
        TrafficChart chart;
        chart.setAnalysis(kwb::decodeAnalyze(loadChartData(QStringLiteral("analyze_L2_1.json"))));
        chart.resize(900, 520);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        QWidget* canvas = chart.findChild<QWidget*>(QStringLiteral("trafficCanvas"));
        QVERIFY(canvas);
        QStringList seen;
        for (int x = 0; x < canvas->width(); x += 4) {
            const QPoint at(x, canvas->height() / 2);
            QHelpEvent help(QEvent::ToolTip, at, canvas->mapToGlobal(at));
            QCoreApplication::sendEvent(canvas, &help);
            const QString text = QToolTip::isVisible() ? QToolTip::text() : QString();
            if (!text.isEmpty() && (seen.isEmpty() || seen.last() != text))
                seen << text;
        }
        QToolTip::hideText();
        QCOMPARE(seen, (QStringList{chart.opToolTip(TrafficChart::kUnfusedTotal),
                                    chart.opToolTip(TrafficChart::kLibraryEpilogue),
                                    chart.opToolTip(TrafficChart::kOneKernel), chart.opToolTip(0), chart.opToolTip(1),
                                    chart.opToolTip(2)}));
        QVERIFY(chart.opToolTip(TrafficChart::kLibraryEpilogue).contains(QLatin1String("1 fused pass")));
    }

    void aLongChainScrolls()
    {
        TrafficChart chart;
        chart.setAnalysis(kwb::decodeAnalyze(loadChartData(QStringLiteral("analyze_L3_10.json"))));
        QVERIFY(chart.emptyText().isEmpty());
        chart.resize(900, 480);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        auto* scroll = chart.findChild<QScrollArea*>();
        QVERIFY(scroll);
        // Hundreds of ops do not fit: the chart scrolls sideways and exports in full.
        QVERIFY(scroll->horizontalScrollBar()->maximum() > 0);
        QVERIFY(chart.exportSize().width() > 5000);
        QVERIFY(chart.summaryText().contains(QLatin1String("view op")));

        // Scrolled to the end, the totals and both axes stay at the visible left edge, and the
        // totals still answer the cursor.
        scroll->horizontalScrollBar()->setValue(scroll->horizontalScrollBar()->maximum());
        QCoreApplication::processEvents();
        const QRect visible = chart.visibleCanvasRect();
        QVERIFY(visible.left() > 1000);
        const auto bars = chart.drawnBars();
        QCOMPARE(bars.first().first, int(TrafficChart::kUnfusedTotal));
        for (int i = 0; i < 3; ++i)
            QVERIFY2(visible.contains(bars.at(i).second.center().toPoint()), qPrintable(QString::number(i)));
        QWidget* canvas = chart.findChild<QWidget*>(QStringLiteral("trafficCanvas"));
        const QPoint at = bars.first().second.center().toPoint();
        QHelpEvent help(QEvent::ToolTip, at, canvas->mapToGlobal(at));
        QCoreApplication::sendEvent(canvas, &help);
        QTRY_VERIFY(QToolTip::isVisible());
        QCOMPARE(QToolTip::text(), chart.opToolTip(TrafficChart::kUnfusedTotal));
        QToolTip::hideText();
    }

    // Bytes as time at the chosen GPU's bandwidth (issue 38): bytes / (GB/s) = ns.
    void bytesAsTimeAtTheGpusBandwidth()
    {
        TrafficChart chart;
        chart.setAnalysis(kwb::decodeAnalyze(loadChartData(QStringLiteral("analyze_L2_1.json"))));
        QVERIFY(chart.timeSummaryText().isEmpty()); // no GPU: bytes only
        QVERIFY(!chart.opToolTip(TrafficChart::kUnfusedTotal).contains(QStringLiteral("→")));
        chart.resize(1100, 560);
        chart.show();
        QVERIFY(QTest::qWaitForWindowExposed(&chart));
        const QSize before = chart.findChild<QWidget*>(QStringLiteral("trafficCanvas"))->minimumSize();

        chart.setGpu(QStringLiteral("NVIDIA H200 SXM 141GB"), 4800.0, QStringLiteral("datasheet"));
        QCOMPARE(chart.bytesAsTime(9.4e9), QStringLiteral("9.40 GB → 1.96 ms"));
        const QString line = chart.timeSummaryText();
        // 5.74 GB / 4.8 TB/s = 1.196 ms, 3.66 GB: 0.762 ms, 1.58 GB: 0.329 ms.
        QVERIFY2(line.startsWith(QStringLiteral("At 4.80 TB/s (NVIDIA H200 SXM 141GB, datasheet)")), qPrintable(line));
        QVERIFY2(line.contains(QStringLiteral("unfused 5.74 GB → 1.20 ms")), qPrintable(line));
        QVERIFY2(line.contains(QStringLiteral("library + epilogue 3.66 GB → 762 µs")), qPrintable(line));
        QVERIFY2(line.contains(QStringLiteral("one kernel 1.58 GB → 329 µs")), qPrintable(line));
        QVERIFY(!line.contains(QLatin1String("bound"))); // one conv: its one kernel is a real option
        QVERIFY(
            chart.opToolTip(TrafficChart::kUnfusedTotal).contains(QStringLiteral("5.74 GB → 1.20 ms at 4.80 TB/s")));
        QVERIFY(chart.opToolTip(TrafficChart::kOneKernel).contains(QStringLiteral("1.58 GB → 329 µs")));
        QVERIFY(chart.opToolTip(0).contains(QStringLiteral("on the NVIDIA H200 SXM 141GB")));
        // The time line and each total's third line take room: the canvas grew.
        QCoreApplication::processEvents();
        const QSize after = chart.findChild<QWidget*>(QStringLiteral("trafficCanvas"))->minimumSize();
        QVERIFY2(after.height() > before.height(),
                 qPrintable(QStringLiteral("%1 -> %2").arg(before.height()).arg(after.height())));

        chart.setGpu(QString(), 0.0, QString());
        QVERIFY(chart.timeSummaryText().isEmpty());
    }

    // ResNet-101's one kernel is a bound: drawn hatched with a dashed outline, named "bound";
    // L2/1's (one conv and its epilogue) is a real option, drawn solid.
    void oneKernelOfANetworkIsABound()
    {
        auto whiteShare = [](const QImage& image, QRectF bar) {
            int white = 0, all = 0;
            const QRect r = bar.toRect().adjusted(3, 3, -3, -3);
            for (int y = r.top(); y <= r.bottom(); ++y)
                for (int x = r.left(); x <= r.right(); ++x, ++all)
                    white += image.pixelColor(x, y) == QColor(Qt::white) ? 1 : 0;
            return all > 0 ? double(white) / all : -1.0;
        };
        for (const char* file : {"analyze_L2_1.json", "analyze_L3_10.json"}) {
            TrafficChart chart;
            chart.setAnalysis(kwb::decodeAnalyze(loadChartData(QString::fromLatin1(file))));
            const bool network = QByteArray(file).contains("L3_10");
            QCOMPARE(chart.breakdown().oneKernelIsBound(), network);
            QCOMPARE(chart.summaryText().contains(QLatin1String("as a bound")), network);
            QCOMPARE(chart.opToolTip(TrafficChart::kOneKernel).contains(QLatin1String("A bound, not an option")),
                     network);
            chart.resize(1100, 560);
            chart.show();
            QVERIFY(QTest::qWaitForWindowExposed(&chart));
            QWidget* canvas = chart.findChild<QWidget*>(QStringLiteral("trafficCanvas"));
            const QImage image = canvas->grab().toImage();
            QRectF one, unfused;
            for (const auto& [position, rect] : chart.drawnBars()) {
                if (position == TrafficChart::kOneKernel)
                    one = rect;
                if (position == TrafficChart::kUnfusedTotal)
                    unfused = rect;
            }
            QVERIFY(one.height() > 8);
            // Solid bars have no white inside; the bound's hatching leaves most of it white.
            QVERIFY2(whiteShare(image, unfused) < 0.01, file);
            const double share = whiteShare(image, one);
            QVERIFY2(network ? share > 0.4 : share < 0.01,
                     qPrintable(QStringLiteral("%1: %2").arg(QLatin1String(file)).arg(share)));
        }
    }
};

QTEST_MAIN(TestTrafficChart)
#include "tst_trafficchart.moc"
