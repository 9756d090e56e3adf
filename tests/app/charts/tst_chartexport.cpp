// Export to PNG and SVG, the export actions, and every chart widget grabbed offscreen (so it lays
// out and paints without a display). Set KWB_CHART_SHOTS=DIR to keep the grabbed pictures.
#include "chartstestdata.h"

#include "app/charts/bestofnchart.h"
#include "app/charts/chartexport.h"
#include "app/charts/rooflinechart.h"
#include "app/charts/rooflinepage.h"
#include "app/charts/trafficchart.h"

#include <QAction>
#include <QApplication>
#include <QContextMenuEvent>
#include <QDir>
#include <QFile>
#include <QHash>
#include <QImage>
#include <QMenu>
#include <QSet>
#include <QTemporaryDir>
#include <QTest>
#include <QTimer>

#include <functional>
#include <memory>

using namespace kwb;
using namespace kwb::app;

namespace {

QList<RooflinePoint> somePoints()
{
    QList<RooflinePoint> points;
    const struct
    {
        const char* task;
        int level;
        double x, ref, cand, candX;
    } rows[] = {{"L1/1", 1, 682.7, 12000.0, 0, 0},
                {"L1/19", 1, 0.125, 420.0, 480.0, 0.125},
                {"L2/1", 2, 52.3, 9000.0, 9600.0, 190.4},
                {"L2/2", 2, 7.9, 2100.0, 6400.0, 70.1},
                {"L3/1", 3, 98.0, 6100.0, 0, 0}};
    for (const auto& r : rows) {
        RooflinePoint p;
        p.task = QLatin1String(r.task);
        p.level = r.level;
        p.intensity = r.x;
        p.referenceGflops = r.ref;
        if (r.cand > 0) {
            p.candidateGflops = r.cand;
            p.candidateIntensity = r.candX;
        }
        points.append(p);
    }
    return points;
}

BestOfNPoint pt(int n, double pct, double low, double high)
{
    BestOfNPoint p;
    p.n = n;
    p.tasks = 30;
    p.passPct.value = pct;
    p.passPct.low = low;
    p.passPct.high = high;
    return p;
}

/// Distinct colours in an image: a blank or single-colour picture has one or two.
int distinctColours(const QImage& image)
{
    QSet<QRgb> colours;
    const QImage img = image.convertToFormat(QImage::Format_RGB32);
    for (int y = 0; y < img.height(); y += 2)
        for (int x = 0; x < img.width(); x += 2)
            colours.insert(img.pixel(x, y));
    return colours.size();
}

/// The share of pixels that are not the background (the most common colour).
double inkShare(const QImage& image)
{
    const QImage img = image.convertToFormat(QImage::Format_RGB32);
    QHash<QRgb, qint64> counts;
    qint64 total = 0;
    for (int y = 0; y < img.height(); y += 2)
        for (int x = 0; x < img.width(); x += 2, ++total)
            ++counts[img.pixel(x, y)];
    qint64 background = 0;
    for (auto it = counts.cbegin(); it != counts.cend(); ++it)
        background = std::max(background, it.value());
    return total ? double(total - background) / double(total) : 0.0;
}

struct Made
{
    std::unique_ptr<QWidget> widget;
    QSize size;
};

} // namespace

class TestChartExport : public QObject
{
    Q_OBJECT
private:
    QTemporaryDir m_dir;

    /// Each chart widget as the window would show it, with data.
    QList<QPair<QString, std::function<Made()>>> widgets()
    {
        return {
            {QStringLiteral("roofline"),
             [] {
                 auto chart = std::make_unique<RooflineChart>();
                 chart->setRoofs(fromDeviceResponse(loadChartData(QStringLiteral("device_h200.json"))));
                 chart->setPoints(somePoints());
                 return Made{std::move(chart), QSize(900, 600)};
             }},
            {QStringLiteral("roofline-page"),
             [] {
                 auto page = std::make_unique<RooflinePage>();
                 page->setPoints(somePoints());
                 return Made{std::move(page), QSize(1000, 720)};
             }},
            {QStringLiteral("traffic-L2_1"),
             [] {
                 auto chart = std::make_unique<TrafficChart>();
                 chart->setAnalysis(decodeAnalyze(loadChartData(QStringLiteral("analyze_L2_1.json"))));
                 chart->setMeasured(decodeProfile(loadChartData(QStringLiteral("profile_L2_1.json"))),
                                    4265.890857861522, QStringLiteral("measured copy"));
                 return Made{std::move(chart), QSize(900, 520)};
             }},
            {QStringLiteral("traffic-L2_2"),
             [] {
                 auto chart = std::make_unique<TrafficChart>();
                 chart->setAnalysis(decodeAnalyze(loadChartData(QStringLiteral("analyze_L2_2.json"))));
                 return Made{std::move(chart), QSize(900, 520)};
             }},
            {QStringLiteral("traffic-L3_10"),
             [] {
                 auto chart = std::make_unique<TrafficChart>();
                 chart->setAnalysis(decodeAnalyze(loadChartData(QStringLiteral("analyze_L3_10.json"))));
                 return Made{std::move(chart), QSize(900, 520)};
             }},
            {QStringLiteral("best-of-n"),
             [] {
                 auto chart = std::make_unique<BestOfNChart>();
                 chart->setCurves({{QStringLiteral("agent"),
                                    0,
                                    {pt(1, 40.0, 23.3, 56.7), pt(2, 53.3, 36.7, 70.0), pt(4, 63.3, 46.7, 80.0),
                                     pt(8, 70.0, 53.3, 86.7)},
                                    -1,
                                    0,
                                    {}},
                                   {QStringLiteral("zero-shot"),
                                    0,
                                    {pt(1, 20.0, 6.7, 36.7), pt(2, 30.0, 13.3, 46.7), pt(4, 40.0, 23.3, 56.7),
                                     pt(8, 50.0, 33.3, 66.7)},
                                    -1,
                                    0,
                                    {}}});
                 return Made{std::move(chart), QSize(800, 520)};
             }},
        };
    }

    static QString shotsDir() { return qEnvironmentVariable("KWB_CHART_SHOTS"); }

private Q_SLOTS:
    void initTestCase() { QVERIFY(m_dir.isValid()); }

    void grabEveryWidget_data()
    {
        QTest::addColumn<int>("which");
        const auto all = widgets();
        for (int i = 0; i < all.size(); ++i)
            QTest::newRow(qPrintable(all.at(i).first)) << i;
    }

    void grabEveryWidget()
    {
        QFETCH(int, which);
        const auto entry = widgets().at(which);
        Made made = entry.second();
        QWidget* w = made.widget.get();
        w->resize(made.size);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w));
        const QImage image = w->grab().toImage();
        QCOMPARE(image.size() / image.devicePixelRatio(), made.size);
        const QString path = m_dir.filePath(entry.first + QStringLiteral(".png"));
        QVERIFY(image.save(path));
        if (!shotsDir().isEmpty())
            image.save(QDir(shotsDir()).filePath(entry.first + QStringLiteral("-grab.png")));
        // Laid out and painted: many colours (lines, text, markers), a fair amount of ink.
        const int colours = distinctColours(image);
        QVERIFY2(colours > 20, qPrintable(QStringLiteral("%1 colours").arg(colours)));
        const double ink = inkShare(image);
        QVERIFY2(ink > 0.02 && ink < 0.9, qPrintable(QStringLiteral("ink %1").arg(ink)));

        // Every chart carries the export actions in its context menu.
        QWidget* chart = w;
        if (auto* page = qobject_cast<RooflinePage*>(w))
            chart = page->chart();
        QVERIFY(chart->findChild<QAction*>(QStringLiteral("exportPng")));
        QVERIFY(chart->findChild<QAction*>(QStringLiteral("exportSvg")));
        QCOMPARE(chart->contextMenuPolicy(), Qt::ActionsContextMenu);
    }

    void exportPngAndSvg_data() { grabEveryWidget_data(); }

    void exportPngAndSvg()
    {
        QFETCH(int, which);
        const auto entry = widgets().at(which);
        Made made = entry.second();
        QWidget* w = made.widget.get();
        w->resize(made.size);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w));
        QWidget* chart = w;
        if (auto* page = qobject_cast<RooflinePage*>(w))
            chart = page->chart();

        const QString png = m_dir.filePath(entry.first + QStringLiteral("-export.png"));
        QString error;
        QVERIFY2(exportChart(chart, png, &error), qPrintable(error));
        QImage image(png);
        QVERIFY(!image.isNull());
        QVERIFY(image.width() >= 2 * std::min(chart->width(), 600)); // twice the on-screen size
        QVERIFY2(distinctColours(image) > 20, qPrintable(entry.first));
        if (!shotsDir().isEmpty())
            QFile::copy(png, QDir(shotsDir()).filePath(entry.first + QStringLiteral("-export.png")));

        const QString svg = m_dir.filePath(entry.first + QStringLiteral(".SVG")); // the suffix in any case
        QVERIFY2(exportChart(chart, svg, &error), qPrintable(error));
        QFile f(svg);
        QVERIFY(f.open(QIODevice::ReadOnly));
        const QByteArray text = f.readAll();
        QVERIFY(text.startsWith("<?xml"));
        QVERIFY(text.contains("<svg"));
        QVERIFY(text.trimmed().endsWith("</svg>"));
        // Text stays text: a label of the chart is in the file.
        const QByteArray label = entry.first.startsWith(QLatin1String("roofline"))  ? QByteArray("FLOP/s")
                                 : entry.first.startsWith(QLatin1String("traffic")) ? QByteArray("fused")
                                                                                    : QByteArray("correct");
        QVERIFY2(text.contains(label), label.constData());
    }

    void contextMenuOffersExport_data() { grabEveryWidget_data(); }

    void contextMenuOffersExport()
    {
        // A right-click where the user makes it (the chart's viewport or canvas) opens a menu
        // with the two export actions.
        QFETCH(int, which);
        const auto entry = widgets().at(which);
        Made made = entry.second();
        QWidget* w = made.widget.get();
        w->resize(made.size);
        w->show();
        QVERIFY(QTest::qWaitForWindowExposed(w));
        QWidget* surface = nullptr;
        if (auto* page = qobject_cast<RooflinePage*>(w))
            surface = page->chart()->viewport();
        else if (auto* roofline = qobject_cast<RooflineChart*>(w))
            surface = roofline->viewport();
        else if (auto* bestOfN = qobject_cast<BestOfNChart*>(w))
            surface = bestOfN->chartView()->viewport();
        else
            surface = w->findChild<QWidget*>(QStringLiteral("trafficCanvas"));
        QVERIFY(surface);

        QStringList offered;
        QTimer::singleShot(0, this, [&offered] {
            if (auto* menu = qobject_cast<QMenu*>(QApplication::activePopupWidget())) {
                for (QAction* a : menu->actions())
                    offered << a->text();
                menu->close();
            }
        });
        const QPoint at = surface->rect().center();
        QContextMenuEvent event(QContextMenuEvent::Mouse, at, surface->mapToGlobal(at));
        QCoreApplication::sendEvent(surface, &event);
        QCOMPARE(offered, (QStringList{QStringLiteral("Export as PNG…"), QStringLiteral("Export as SVG…")}));
    }

    void exportOfAHiddenWidget()
    {
        // The window may export a chart that is not on screen: it still has a size and content.
        RooflineChart chart;
        chart.resize(700, 500);
        chart.setRoofs(*findGpu(QStringLiteral("v100-sxm2-32gb")));
        chart.setPoints(somePoints());
        const QString png = m_dir.filePath(QStringLiteral("hidden.png"));
        QString error;
        QVERIFY2(exportChart(&chart, png, &error), qPrintable(error));
        QVERIFY(distinctColours(QImage(png)) > 10);
    }

    void exportErrors()
    {
        RooflineChart chart;
        QString error;
        QVERIFY(!exportChart(&chart, m_dir.filePath(QStringLiteral("chart.jpg")), &error));
        QVERIFY2(error.contains(QLatin1String(".png or .svg")), qPrintable(error));
        error.clear();
        QVERIFY(!exportChart(&chart, m_dir.filePath(QStringLiteral("no/such/dir/chart.png")), &error));
        QVERIFY(error.contains(QLatin1String("could not write")));
        error.clear();
        QVERIFY(!exportChart(&chart, m_dir.filePath(QStringLiteral("no/such/dir/chart.svg")), &error));
        QVERIFY(error.contains(QLatin1String("could not write")));
        QVERIFY(!exportChart(nullptr, m_dir.filePath(QStringLiteral("x.png")), &error));
    }
};

QTEST_MAIN(TestChartExport)
#include "tst_chartexport.moc"
