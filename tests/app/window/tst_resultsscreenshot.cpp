// Results at 1280×720 on the shipped study database (bench/results/…study-fixture-llm-h200.db.xz,
// ten runs, six of them the agent regime): Table I shows every run without scrolling, its
// columns are as wide as their text, and every run has its own name in Table I, the pair table
// and the run list (issue 15: Table I showed two rows; runs #4 and #6–#10 were all "agent").
// Writes docs-ready PNGs beside the test program (results-1280x720.png).

#include "app/mainwindow.h"
#include "app/runs/resultspage.h"
#include "app/runs/runlistmodel.h"

#include <QDir>
#include <QHeaderView>
#include <QProcess>
#include <QScrollBar>
#include <QSet>
#include <QStandardPaths>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

using namespace kwb;
using namespace kwb::app;

class TestResultsScreenshot : public QObject
{
    Q_OBJECT
    QTemporaryDir m_dir;
    QString m_db;

    static QSet<QString> columnTexts(const QTableView* view, int column)
    {
        QSet<QString> texts;
        for (int r = 0; r < view->model()->rowCount(); ++r)
            texts.insert(view->model()->index(r, column).data().toString());
        return texts;
    }

private Q_SLOTS:
    void initTestCase()
    {
        QStandardPaths::setTestModeEnabled(true);
        m_db = m_dir.filePath(QStringLiteral("study.db"));
        QProcess xz;
        xz.setStandardOutputFile(m_db);
        xz.start(QStringLiteral("xz"), {QStringLiteral("-dc"), QStringLiteral(KWB_STUDY_DB_XZ)});
        QVERIFY2(xz.waitForFinished(60000) && xz.exitCode() == 0, qPrintable(xz.errorString()));
    }

    void resultsAt1280x720()
    {
        MainWindow window(QStringLiteral(KWB_REPLAYWORKER));
        window.resize(1280, 720);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QVERIFY(window.openDatabase(m_db));
        window.showPage(QStringLiteral("results"));
        auto* results = qobject_cast<ResultsPage*>(window.page(QStringLiteral("results")));
        QTRY_VERIFY_WITH_TIMEOUT(results->report().has_value() && !results->isBuilding(), 120000);
        QTest::qWait(200); // layouts after the tables were filled
        // The window fits the screen: no page's minimum height pushes it past 720 (Launch did).
        QCOMPARE(window.size(), QSize(1280, 720));

        auto* tableOne = results->findChild<QTableView*>(QStringLiteral("runTable"));
        const int runs = tableOne->model()->rowCount();
        QCOMPARE(runs, 10);
        // Every row of Table I in view: the last row's bottom inside the viewport, no vertical scrolling.
        const QRect last = tableOne->visualRect(tableOne->model()->index(runs - 1, 0));
        QVERIFY2(last.isValid() && last.bottom() <= tableOne->viewport()->height(),
                 qPrintable(QStringLiteral("last row ends at %1, viewport %2 high")
                                .arg(last.bottom())
                                .arg(tableOne->viewport()->height())));
        QCOMPARE(tableOne->verticalScrollBar()->maximum(), 0);
        // Each column at least as wide as its widest cell and header: no "…" in a cell.
        // The run column may wrap a long name onto more lines instead: each row as high as its
        // wrapped name needs.
        for (int c = 0; c < tableOne->model()->columnCount(); ++c) {
            int needed = tableOne->horizontalHeader()->sectionSizeHint(c);
            for (int r = 0; r < runs; ++r) {
                const QModelIndex index = tableOne->model()->index(r, c);
                const int width = tableOne->sizeHintForIndex(index).width();
                if (c == 0 && tableOne->wordWrap() && width > tableOne->columnWidth(c)) {
                    const QRect wrapped = tableOne->fontMetrics().boundingRect(
                        QRect(0, 0, tableOne->columnWidth(c) - 12, 10000), Qt::TextWordWrap, index.data().toString());
                    QVERIFY2(wrapped.width() <= tableOne->columnWidth(c) - 12 &&
                                 wrapped.height() <= tableOne->rowHeight(r),
                             qPrintable(QStringLiteral("run %1 wraps to %2x%3 in a %4x%5 cell")
                                            .arg(r)
                                            .arg(wrapped.width())
                                            .arg(wrapped.height())
                                            .arg(tableOne->columnWidth(c))
                                            .arg(tableOne->rowHeight(r))));
                    continue;
                }
                needed = qMax(needed, width);
            }
            QVERIFY2(tableOne->columnWidth(c) >= needed,
                     qPrintable(QStringLiteral("column %1: %2 < %3").arg(c).arg(tableOne->columnWidth(c)).arg(needed)));
        }
        // From the run to the speedup, the columns are in view without scrolling sideways.
        const auto* model = tableOne->model();
        int speedupColumn = -1;
        for (int c = 0; c < model->columnCount(); ++c)
            if (model->headerData(c, Qt::Horizontal).toString() == QLatin1String("Geomean speedup"))
                speedupColumn = c;
        QVERIFY(speedupColumn > 0);
        QCOMPARE(tableOne->horizontalScrollBar()->value(), 0);
        QVERIFY2(tableOne->columnViewportPosition(speedupColumn) + tableOne->columnWidth(speedupColumn)
                     <= tableOne->viewport()->width(),
                 qPrintable(QStringLiteral("speedup column ends at %1, viewport %2 wide")
                                .arg(tableOne->columnViewportPosition(speedupColumn) + tableOne->columnWidth(speedupColumn))
                                .arg(tableOne->viewport()->width())));

        // Ten runs, ten names: in Table I, in the run list and in the pairs.
        QCOMPARE(columnTexts(tableOne, 0).size(), 10);
        auto* runList = results->findChild<QTableView*>(QStringLiteral("runList"));
        QCOMPARE(columnTexts(runList, RunListModel::NameColumn).size(), 10);
        auto* pairs = results->findChild<QTableView*>(QStringLiteral("pairTable"));
        QCOMPARE(pairs->model()->rowCount(), 45);
        QSet<QString> pairNames;
        for (int r = 0; r < pairs->model()->rowCount(); ++r)
            pairNames.insert(pairs->model()->index(r, 0).data().toString() + QStringLiteral(" | ")
                             + pairs->model()->index(r, 1).data().toString());
        QCOMPARE(pairNames.size(), 45);
        QVERIFY(columnTexts(tableOne, 0).contains(QStringLiteral("#6 agent n=8 1 turn sweep")));
        QVERIFY(columnTexts(tableOne, 0).contains(QStringLiteral("#7 agent −best_of_n")));

        // Table II is the export's: a row per run and level.
        auto* tableTwo = results->findChild<QTableView*>(QStringLiteral("levelTable"));
        QCOMPARE(tableTwo->model()->rowCount(), 30);

        const QString out = QStringLiteral(KWB_WINDOW_TEST_OUTPUT "/results-1280x720.png");
        QVERIFY(window.grab().toImage().save(out));
    }
};

QTEST_MAIN(TestResultsScreenshot)
#include "tst_resultsscreenshot.moc"
