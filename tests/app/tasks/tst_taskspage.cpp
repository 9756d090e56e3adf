// TasksPage and TaskDetailView, driven as a user would (typing in the search field, choosing
// filters, double-clicking) and checked by what they show: figures from real analyze responses,
// eager times and achieved rates, empty and failure states, a highlighter from the factory, and a
// grab that renders offscreen.

#include "taskfixtures.h"

#include "app/tasks/taskdetailview.h"
#include "app/tasks/taskfilterproxymodel.h"
#include "app/tasks/tasklistmodel.h"
#include "app/tasks/taskspage.h"
#include "core/tasks/taskcatalog.h"
#include "core/workers/workersupervisor.h"

#include <QComboBox>
#include <QDir>
#include <QImage>
#include <QJsonArray>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QSet>
#include <QSignalSpy>
#include <QStandardItemModel>
#include <QSyntaxHighlighter>
#include <QTabWidget>
#include <QTest>
#include <QTextLayout>
#include <QTreeView>
#include <QTreeWidget>

using namespace kwb;
using namespace kwb::app;
using namespace kwb::test;

namespace {

QString labelText(const QWidget& root, const char* objectName)
{
    const auto* label = root.findChild<QLabel*>(QLatin1String(objectName));
    if (!label)
        qFatal("no label %s", objectName);
    return label->text();
}

// Colours "def" and "return" like a keyword; counts the blocks it coloured.
class KeywordHighlighter : public QSyntaxHighlighter
{
public:
    using QSyntaxHighlighter::QSyntaxHighlighter;
    int blocks = 0;

protected:
    void highlightBlock(const QString& text) override
    {
        ++blocks;
        static const QRegularExpression keyword(QStringLiteral("\\b(def|return)\\b"));
        QTextCharFormat format;
        format.setFontWeight(QFont::Bold);
        for (auto it = keyword.globalMatch(text); it.hasNext();) {
            const QRegularExpressionMatch m = it.next();
            setFormat(int(m.capturedStart()), int(m.capturedLength()), format);
        }
    }
};

QStringList viewIds(const QTreeView& view)
{
    QStringList ids;
    const QAbstractItemModel* model = view.model();
    for (int level = 0; level < model->rowCount(); ++level) {
        const QModelIndex parent = model->index(level, 0);
        for (int row = 0; row < model->rowCount(parent); ++row)
            ids << model->index(row, 0, parent).data(TaskListModel::TaskIdRole).toString();
    }
    return ids;
}

} // namespace

class TestTasksPage : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void detailFromGoldenAnalyzeResponse();
    void detailOpChainShapesAndCode();
    void eagerTimeAndRoofs();
    void shapeSetsInTheDetail();
    void evaluatorFloorFlops();
    void searchFieldAndFilters();
    void doubleClickActivatesAndShowTaskSelects();
    void highlighterFactory();
    void failedCatalogShowsWhyAndRetries();
    void loadErrorsAndProgress();
    void liveLoadFromReplayWorker();
    void grabsToANonUniformImage();
    void boundFilterCountsAndUncountedTasks();
    void allOfKernelBenchWithKernelBenchOnlyTasks();
};

void TestTasksPage::detailFromGoldenAnalyzeResponse()
{
    TaskCatalog catalog;
    feedRecorded(catalog, false);
    TaskDetailView detail(&catalog);
    detail.showTask(QStringLiteral("L1/1"));
    // Not analysed yet: the figures say so.
    QCOMPARE(labelText(detail, "flopsValue"), QStringLiteral("–"));
    QVERIFY(labelText(detail, "analysisNote").startsWith(QLatin1String("Analysing")));

    QVERIFY(catalog.applyAnalyzeResponse(goldenResponse("06_analyze_l1_1.response.json")));
    QCOMPARE(labelText(detail, "title"), QStringLiteral("L1/1  Square matrix multiplication"));
    QCOMPARE(labelText(detail, "flopsValue"), QStringLiteral("137.4 GFLOP"));
    QCOMPARE(labelText(detail, "bytesUnfusedValue"), QStringLiteral("201.3 MB"));
    QCOMPARE(labelText(detail, "bytesFusedValue"), QStringLiteral("201.3 MB"));
    QCOMPARE(labelText(detail, "intensityUnfusedValue"), QStringLiteral("682.7 FLOP/B"));
    QCOMPARE(labelText(detail, "intensityFusedValue"), QStringLiteral("682.7 FLOP/B"));
    QCOMPARE(detail.findChild<QLabel*>(QStringLiteral("flopsValue"))->toolTip(),
             QStringLiteral("137\u2009438\u2009953\u2009472 FLOP"));
    QVERIFY(detail.findChild<QLabel*>(QStringLiteral("analysisNote"))->isHidden());
    // The golden file carries totals only: the op table says so instead of staying blank.
    const auto* ops = detail.findChild<QTreeWidget*>(QStringLiteral("opChain"));
    QCOMPARE(ops->topLevelItemCount(), 1);
    QCOMPARE(ops->topLevelItem(0)->text(1), QStringLiteral("The analysis lists no ops (1 in total)"));
}

void TestTasksPage::detailOpChainShapesAndCode()
{
    TaskCatalog catalog;
    feedRecorded(catalog);
    TaskDetailView detail(&catalog);
    QCOMPARE(labelText(detail, "emptyState"),
             QStringLiteral("Select a task on the left to see its shapes, op chain and reference code."));
    detail.showTask(QStringLiteral("L2/1"));

    QCOMPARE(labelText(detail, "flopsValue"), QStringLiteral("300.4 GFLOP"));
    QCOMPARE(labelText(detail, "bytesUnfusedValue"), QStringLiteral("5.74 GB"));
    QCOMPARE(labelText(detail, "bytesFusedValue"), QStringLiteral("1.58 GB"));
    QCOMPARE(labelText(detail, "intensityUnfusedValue"), QStringLiteral("52.3 FLOP/B"));
    QCOMPARE(labelText(detail, "intensityFusedValue"), QStringLiteral("190.4 FLOP/B"));
    QVERIFY(labelText(detail, "subtitle").contains(QLatin1String("KernelBench level2/1_Conv2D_ReLU_BiasAdd.py")));
    QVERIFY(labelText(detail, "description").startsWith(QLatin1String("Conv2d (64 -> 128")));

    const auto* tabs = detail.findChild<QTabWidget*>();
    QCOMPARE(tabs->tabText(0), QStringLiteral("Op chain (3)"));
    const auto* ops = detail.findChild<QTreeWidget*>(QStringLiteral("opChain"));
    QCOMPARE(ops->topLevelItemCount(), 4); // three ops and the total
    const QTreeWidgetItem* conv = ops->topLevelItem(0);
    QCOMPARE(conv->text(1), QStringLiteral("conv2d"));
    QCOMPARE(conv->text(2), QStringLiteral("conv"));
    QCOMPARE(conv->text(3), QStringLiteral("299.9 GFLOP"));
    QCOMPARE(conv->text(4), QStringLiteral("1.58 GB"));
    QCOMPARE(conv->text(5), QStringLiteral("190.1"));
    QCOMPARE(conv->text(6), QStringLiteral("27 %")); // 1.578 of 5.739 GB op by op
    QCOMPARE(conv->text(7), QStringLiteral("128×128×126×126"));
    QCOMPARE(conv->text(8), QStringLiteral("128×64×128×128, 128×64×3×3, 128"));
    QVERIFY(conv->toolTip(0).contains(QLatin1String("line 2: x = torch.conv2d(")));
    const QTreeWidgetItem* total = ops->topLevelItem(3);
    QCOMPARE(total->text(1), QStringLiteral("Total"));
    QCOMPARE(total->text(3), QStringLiteral("300.4 GFLOP"));
    QCOMPARE(total->text(4), QStringLiteral("5.74 GB"));
    QCOMPARE(total->text(5), QStringLiteral("52.3"));

    const auto* shapes = detail.findChild<QTreeWidget*>(QStringLiteral("shapes"));
    QCOMPARE(shapes->topLevelItem(0)->text(0), QStringLiteral("Dimensions (6)"));
    QCOMPARE(shapes->topLevelItem(0)->child(0)->text(0), QStringLiteral("N"));
    QCOMPARE(shapes->topLevelItem(0)->child(0)->text(2), QStringLiteral("128"));
    QCOMPARE(shapes->topLevelItem(0)->child(0)->text(3), QStringLiteral("2"));
    const QTreeWidgetItem* x = shapes->topLevelItem(1)->child(0);
    QCOMPARE(x->text(0), QStringLiteral("x"));
    QCOMPARE(x->text(1), QStringLiteral("N×C_in×H×W"));
    QCOMPARE(x->text(2), QStringLiteral("128×64×128×128"));
    QCOMPARE(x->text(3), QStringLiteral("2×64×12×12"));
    QCOMPARE(x->text(4), QStringLiteral("float32, rand"));
    QCOMPARE(shapes->topLevelItem(2)->text(0), QStringLiteral("Parameters (3)"));
    QCOMPARE(shapes->topLevelItem(3)->child(0)->text(2), QStringLiteral("128×128×126×126"));

    const auto* code = detail.findChild<QPlainTextEdit*>(QStringLiteral("referenceCode"));
    QCOMPARE(code->toPlainText(), catalog.task(QStringLiteral("L2/1"))->forward);
    QVERIFY(code->isReadOnly());

    detail.showTask(QStringLiteral("L9/9"));
    QVERIFY(labelText(detail, "emptyState").startsWith(QLatin1String("Select a task")));
}

// Issue 39 item 1: the sets at which correctness is checked, as the worker lists them.
void TestTasksPage::shapeSetsInTheDetail()
{
    QJsonObject response = recordedTasks();
    QJsonArray tasks = response.value(QLatin1String("tasks")).toArray();
    for (int i = 0; i < tasks.size(); ++i) {
        QJsonObject t = tasks.at(i).toObject();
        if (t.value(QLatin1String("id")).toString() != QLatin1String("L2/1"))
            continue;
        const QJsonArray dims = t.value(QLatin1String("dims")).toArray();
        // Each set a full assignment, as src/worker/tasks/task.cpp writes it: N and H changed.
        const auto with = [&dims](qint64 n, qint64 h, qint64 hSmoke) {
            QJsonArray out;
            for (const QJsonValue& v : dims) {
                QJsonObject d = v.toObject();
                const QString name = d.value(QLatin1String("name")).toString();
                if (name == QLatin1String("N"))
                    d.insert(QLatin1String("full"), n);
                if (name == QLatin1String("H")) {
                    d.insert(QLatin1String("full"), h);
                    d.insert(QLatin1String("smoke"), hSmoke);
                }
                out.append(d);
            }
            return out;
        };
        const auto set = [](const char* name, bool heldOut, const QJsonArray& d) {
            return QJsonObject{{QStringLiteral("name"), QLatin1String(name)},
                               {QStringLiteral("held_out"), heldOut},
                               {QStringLiteral("dims"), d}};
        };
        t.insert(QStringLiteral("shape_sets"),
                 QJsonArray{set("kernelbench", false, dims), set("odd", false, with(127, 127, 11)),
                            set("held_out", true, with(128, 97, 15))});
        tasks.replace(i, t);
    }
    response.insert(QStringLiteral("tasks"), tasks);
    TaskCatalog catalog;
    QVERIFY(catalog.applyTasksResponse(response));
    TaskDetailView detail(&catalog);
    detail.showTask(QStringLiteral("L2/1"));
    const auto* shapes = detail.findChild<QTreeWidget*>(QStringLiteral("shapes"));
    const QTreeWidgetItem* sets = shapes->topLevelItem(shapes->topLevelItemCount() - 1);
    QCOMPARE(sets->text(0), QStringLiteral("Shape sets checked (3)"));
    QCOMPARE(sets->child(0)->text(0), QStringLiteral("kernelbench"));
    QCOMPARE(sets->child(0)->text(2), QStringLiteral("as above"));
    QCOMPARE(sets->child(1)->text(2), QStringLiteral("N=127, H=127"));
    QCOMPARE(sets->child(1)->text(3), QStringLiteral("H=11"));
    QCOMPARE(sets->child(1)->text(4), QString());
    QCOMPARE(sets->child(2)->text(2), QStringLiteral("H=97"));
    QCOMPARE(sets->child(2)->text(4), QStringLiteral("held out: never shown in a prompt"));

    // A task without sets (the recorded list predates them) shows no such group.
    TaskCatalog plain;
    feedRecorded(plain);
    TaskDetailView other(&plain);
    other.showTask(QStringLiteral("L2/1"));
    const auto* otherShapes = other.findChild<QTreeWidget*>(QStringLiteral("shapes"));
    QVERIFY(!otherShapes->topLevelItem(otherShapes->topLevelItemCount() - 1)
                 ->text(0)
                 .startsWith(QLatin1String("Shape sets")));
}

// Issue 39 item 5: what an evaluation's roofline floor counts, as the worker's analysis says.
void TestTasksPage::evaluatorFloorFlops()
{
    TaskCatalog catalog;
    QVERIFY(catalog.applyTasksResponse(recordedTasks()));
    for (const QJsonValue& v : recordedAnalyses()) {
        QJsonObject a = v.toObject();
        if (a.value(QLatin1String("task")).toString() == QLatin1String("L2/1"))
            a.insert(QStringLiteral("bound_flops"), 33294385152.0); // 2 · 260,112,384 outputs · 64 channels
        QVERIFY(catalog.applyAnalyzeResponse(a));
    }
    TaskDetailView detail(&catalog);
    detail.showTask(QStringLiteral("L2/1"));
    QCOMPARE(labelText(detail, "floorFlopsValue"),
             QStringLiteral("33.29 GFLOP: the matmuls and each convolution's channel contraction, what every "
                            "implementation computes"));
    QCOMPARE(labelText(detail, "flopsValue"), QStringLiteral("300.4 GFLOP"));
    detail.showTask(QStringLiteral("L1/1")); // recorded before the field
    QCOMPARE(labelText(detail, "floorFlopsValue"), QStringLiteral("not in this worker's analysis"));
}

void TestTasksPage::eagerTimeAndRoofs()
{
    TaskCatalog catalog;
    feedRecorded(catalog);
    TaskDetailView detail(&catalog);
    detail.showTask(QStringLiteral("L2/1"));
    QCOMPARE(labelText(detail, "eagerValue"), QStringLiteral("not measured on this GPU yet"));
    QCOMPARE(labelText(detail, "achievedValue"), QStringLiteral("–"));
    QCOMPARE(labelText(detail, "boundValue"), QStringLiteral("unknown: no roofs for the current GPU"));

    EagerTime time;
    time.meanMs = 2.0;
    time.runId = 7;
    catalog.setEagerTimes(QHash<QString, EagerTime>{{QStringLiteral("L2/1"), time}}, QStringLiteral("NVIDIA H200"));
    QCOMPARE(labelText(detail, "eagerValue"), QStringLiteral("2.00 ms (mean), run 7"));
    // 300.43 GFLOP and 1.578 GB (fused) in 2 ms.
    QCOMPARE(labelText(detail, "achievedValue"), QStringLiteral("150.2 TFLOP/s, 788.8 GB/s effective"));

    detail.setRoofs(66900, 4800, QStringLiteral("NVIDIA H200"));
    QCOMPARE(labelText(detail, "boundValue"),
             QStringLiteral("compute: 190.4 FLOP/B fused is at or above the ridge point, 13.9 FLOP/B"));
    // 300.4 GFLOP at 66.9 TFLOP/s: 4.49 ms; 1.58 GB at 4.8 TB/s: 0.329 ms.
    QCOMPARE(labelText(detail, "floorValue"),
             QStringLiteral("4.49 ms (compute 4.49 ms at 66.90 TFLOP/s, memory 0.329 ms at 4.80 TB/s)"));
    // The eager time beats the FP32 floor: cuDNN ran the conv on tensor cores (TF32).
    QCOMPARE(labelText(detail, "achievedValue"),
             QStringLiteral("150.2 TFLOP/s, 788.8 GB/s effective (225 % of the compute peak, 16 % of the bandwidth)"));

    detail.showTask(QStringLiteral("L1/4"));
    QVERIFY(labelText(detail, "boundValue").startsWith(QLatin1String("memory: 0.5 FLOP/B fused")));
    QCOMPARE(labelText(detail, "eagerValue"), QStringLiteral("not measured on this GPU yet"));
    detail.clearRoofs();
    QCOMPARE(labelText(detail, "floorValue"), QStringLiteral("–"));
}

void TestTasksPage::searchFieldAndFilters()
{
    TaskCatalog catalog;
    feedRecorded(catalog);
    TasksPage page(&catalog);
    const auto* view = page.findChild<QTreeView*>(QStringLiteral("taskList"));
    auto* search = page.findChild<QLineEdit*>(QStringLiteral("search"));
    QCOMPARE(viewIds(*view).size(), 9);
    QCOMPARE(labelText(page, "taskCount"), QStringLiteral("9 tasks"));

    QTest::keyClicks(search, QStringLiteral("conv"));
    QCOMPARE(viewIds(*view), (QStringList{QStringLiteral("L2/1"), QStringLiteral("L2/2"), QStringLiteral("L2/6"),
                                          QStringLiteral("L3/4")}));
    QCOMPARE(labelText(page, "taskCount"), QStringLiteral("4 of 9 tasks match"));

    auto* level = page.findChild<QComboBox*>(QStringLiteral("levelFilter"));
    QCOMPARE(level->count(), 4);
    QCOMPARE(level->itemText(3), QStringLiteral("Level 3 (2)"));
    level->setCurrentIndex(level->findData(3));
    QCOMPARE(viewIds(*view), QStringList{QStringLiteral("L3/4")});

    // Nothing left: the empty state says why and offers to clear.
    QTest::keyClicks(search, QStringLiteral("transpose"));
    auto* empty = page.findChild<QLabel*>(QStringLiteral("listEmptyState"));
    QVERIFY(empty->isVisibleTo(&page));
    QVERIFY2(empty->text().contains(QStringLiteral("No task matches “convtranspose”")), qPrintable(empty->text()));
    QMetaObject::invokeMethod(empty, "linkActivated", Q_ARG(QString, QStringLiteral("clear")));
    QCOMPARE(search->text(), QString());
    QCOMPARE(level->currentIndex(), 0);
    QCOMPARE(viewIds(*view).size(), 9);

    auto* category = page.findChild<QComboBox*>(QStringLiteral("categoryFilter"));
    QCOMPARE(category->itemData(1).toString(), QStringLiteral("matmul"));
    QCOMPARE(category->itemText(1), QStringLiteral("Matmul, linear (5)"));
    QCOMPARE(category->findData(QStringLiteral("norm")), -1); // offered only where a task has one
    category->setCurrentIndex(category->findData(QStringLiteral("pool")));
    QCOMPARE(viewIds(*view), (QStringList{QStringLiteral("L2/6"), QStringLiteral("L3/4")}));
    category->setCurrentIndex(0);

    auto* bound = page.findChild<QComboBox*>(QStringLiteral("boundFilter"));
    QVERIFY(!bound->isEnabled());
    page.setRoofs(66900, 4800, QStringLiteral("NVIDIA H200"));
    QVERIFY(bound->isEnabled());
    bound->setCurrentIndex(1);
    QCOMPARE(viewIds(*view), (QStringList{QStringLiteral("L1/4"), QStringLiteral("L1/5")}));
    page.clearRoofs();
    QVERIFY(!bound->isEnabled());
    QCOMPARE(viewIds(*view).size(), 9);
}

void TestTasksPage::doubleClickActivatesAndShowTaskSelects()
{
    TaskCatalog catalog;
    feedRecorded(catalog);
    TasksPage page(&catalog);
    page.resize(1200, 800);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    auto* view = page.findChild<QTreeView*>(QStringLiteral("taskList"));
    QSignalSpy activated(&page, &TasksPage::taskActivated);
    QSignalSpy current(&page, &TasksPage::currentTaskChanged);

    QVERIFY(page.showTask(QStringLiteral("L2/6")));
    QCOMPARE(page.currentTaskId(), QStringLiteral("L2/6"));
    QCOMPARE(current.count(), 1);
    QCOMPARE(labelText(page, "title"), QStringLiteral("L2/6  Conv3d, softmax over channels, MaxPool3d, MaxPool3d"));
    QCOMPARE(view->currentIndex().data(TaskListModel::TaskIdRole).toString(), QStringLiteral("L2/6"));

    const QModelIndex l19 = page.proxyModel()->mapFromSource(page.model()->indexOfTask(QStringLiteral("L3/1")));
    view->scrollTo(l19);
    const QPoint at = view->visualRect(l19).center();
    QTest::mouseClick(view->viewport(), Qt::LeftButton, {}, at);
    QCOMPARE(page.currentTaskId(), QStringLiteral("L3/1"));
    QTest::mouseDClick(view->viewport(), Qt::LeftButton, {}, at);
    QCOMPARE(activated.count(), 1);
    QCOMPARE(activated.first().at(0).toString(), QStringLiteral("L3/1"));

    // Clicking a level heading neither activates nor changes the task shown.
    const QPoint heading = view->visualRect(page.proxyModel()->index(0, 0)).center();
    QTest::mouseDClick(view->viewport(), Qt::LeftButton, {}, heading);
    QCOMPARE(activated.count(), 1);
    QCOMPARE(page.currentTaskId(), QStringLiteral("L3/1"));

    // The roofline's click on a task the search hides: the filters go, the task shows.
    auto* search = page.findChild<QLineEdit*>(QStringLiteral("search"));
    QTest::keyClicks(search, QStringLiteral("matrix"));
    QVERIFY(page.showTask(QStringLiteral("L2/9")));
    QCOMPARE(search->text(), QString());
    QCOMPARE(page.currentTaskId(), QStringLiteral("L2/9"));
    QCOMPARE(view->currentIndex().data(TaskListModel::TaskIdRole).toString(), QStringLiteral("L2/9"));
    QVERIFY(!page.showTask(QStringLiteral("L9/9")));
    QCOMPARE(page.currentTaskId(), QStringLiteral("L2/9"));

    // A new task list keeps the task shown when it still exists.
    QVERIFY(catalog.applyTasksResponse(recordedTasks()));
    QCOMPARE(page.currentTaskId(), QStringLiteral("L2/9"));
    QCOMPARE(view->currentIndex().data(TaskListModel::TaskIdRole).toString(), QStringLiteral("L2/9"));
    // ...and goes back to the empty state when it does not.
    QVERIFY(catalog.applyTasksResponse(recordedBadTasks()));
    QCOMPARE(page.currentTaskId(), QString());
    QVERIFY(labelText(page, "emptyState").startsWith(QLatin1String("Select a task")));
}

void TestTasksPage::highlighterFactory()
{
    TaskCatalog catalog;
    feedRecorded(catalog);
    TasksPage page(&catalog);
    QTextDocument* seen = nullptr;
    QPointer<KeywordHighlighter> made;
    page.setHighlighterFactory([&](QTextDocument* document) {
        seen = document;
        made = new KeywordHighlighter(document);
        return made.data();
    });
    QCOMPARE(seen, page.detailView()->codeDocument());
    QVERIFY(made);
    QVERIFY(page.showTask(QStringLiteral("L2/1")));
    QVERIFY(made->blocks >= 4);
    const QTextBlock first = seen->firstBlock();
    QVERIFY(first.text().startsWith(QLatin1String("def forward")));
    const QList<QTextLayout::FormatRange> formats = first.layout()->formats();
    QCOMPARE(formats.size(), 1);
    QCOMPARE(formats.first().start, 0);
    QCOMPARE(formats.first().length, 3);

    // Another factory replaces the first highlighter; an empty one leaves the code plain.
    page.setHighlighterFactory({});
    QVERIFY(!made);
    QVERIFY(page.showTask(QStringLiteral("L1/1")));
    QVERIFY(seen->firstBlock().layout()->formats().isEmpty());
}

void TestTasksPage::failedCatalogShowsWhyAndRetries()
{
    WorkerSupervisor supervisor;
    supervisor.setProgram(QStringLiteral("/nonexistent/kwb-worker"));
    TaskCatalog catalog;
    catalog.setSupervisor(&supervisor);
    TasksPage page(&catalog);
    auto* empty = page.findChild<QLabel*>(QStringLiteral("listEmptyState"));
    QVERIFY(empty->text().contains(QLatin1String("Ask the worker")));

    catalog.load();
    QVERIFY(empty->text().contains(QLatin1String("Asking the worker for its tasks")));
    QVERIFY(QTest::qWaitFor([&] { return catalog.state() == TaskCatalog::State::Failed; }, 10000));
    QVERIFY(empty->isVisibleTo(&page));
    QVERIFY2(empty->text().contains(QLatin1String("could not get the tasks from the worker (start_failed")),
             qPrintable(empty->text()));
    QVERIFY(empty->text().contains(QLatin1String("Try again")));

    // The link asks again (and fails again, without hanging).
    QSignalSpy states(&catalog, &TaskCatalog::stateChanged);
    QMetaObject::invokeMethod(empty, "linkActivated", Q_ARG(QString, QStringLiteral("load")));
    QCOMPARE(catalog.state(), TaskCatalog::State::LoadingTasks);
    QVERIFY(QTest::qWaitFor([&] { return catalog.state() == TaskCatalog::State::Failed; }, 10000));

    // No worker at all (not found): the reason the window gives is what the page shows.
    TaskCatalog orphan;
    TasksPage orphanPage(&orphan);
    orphan.setUnavailable(QStringLiteral("kwb-worker not found: $KWB_WORKER is unset and bin/ has none"));
    QVERIFY(QTest::qWaitFor([&] { return orphan.state() == TaskCatalog::State::Failed; }, 2000));
    QVERIFY(orphanPage.findChild<QLabel*>(QStringLiteral("listEmptyState"))
                ->text()
                .contains(QLatin1String("kwb-worker not found: $KWB_WORKER is unset")));
}

void TestTasksPage::loadErrorsAndProgress()
{
    TaskCatalog catalog;
    TasksPage page(&catalog);
    auto* errors = page.findChild<QLabel*>(QStringLiteral("loadErrors"));
    QVERIFY(errors->isHidden());
    QVERIFY(catalog.applyTasksResponse(recordedBadTasks()));
    QVERIFY(!errors->isHidden());
    QVERIFY(errors->text().contains(QLatin1String("20 task files could not be loaded")));
    QVERIFY(errors->text().contains(QLatin1String("bad_syntax.toml")));
    QVERIFY(errors->text().contains(QLatin1String("and 16 more")));
    QVERIFY(errors->toolTip().contains(QLatin1String("unknown_dtype.toml: inputs[0].dtype: unknown dtype 'float31'")));
    QVERIFY(catalog.applyTasksResponse(recordedTasks()));
    QVERIFY(errors->isHidden());
}

void TestTasksPage::liveLoadFromReplayWorker()
{
    WorkerSupervisor supervisor;
    supervisor.setProgram(QStringLiteral(KWB_REPLAYWORKER),
                          replayArguments({QStringLiteral("--crash-on-analyze"), QStringLiteral("L2/2")}));
    supervisor.setIsolation(WorkerSupervisor::Isolation::ReuseWhileHealthy);
    TaskCatalog catalog;
    catalog.setSupervisor(&supervisor);
    TasksPage page(&catalog);
    page.resize(1200, 800);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    catalog.load();
    QVERIFY(QTest::qWaitFor([&] { return catalog.state() == TaskCatalog::State::Ready; }, 20000));
    QCOMPARE(labelText(page, "taskCount"), QStringLiteral("9 tasks"));
    // One analysis crashed the worker: the banner says so and offers a reload.
    QCOMPARE(labelText(page, "stateText"),
             QStringLiteral("1 of 9 tasks could not be analysed (the Ops column says why)"));
    QVERIFY(page.findChild<QPushButton*>()->isVisible());
    const QModelIndex ops = page.model()->indexOfTask(QStringLiteral("L2/2"), TaskListModel::OpsColumn);
    QCOMPARE(ops.data().toString(), QStringLiteral("analysis failed"));
    QVERIFY(ops.data(Qt::ToolTipRole).toString().startsWith(QLatin1String("crashed")));
    QVERIFY(page.showTask(QStringLiteral("L2/2")));
    QVERIFY(
        labelText(page, "analysisNote").startsWith(QLatin1String("The worker could not analyse this task: crashed")));
}

void TestTasksPage::grabsToANonUniformImage()
{
    TaskCatalog catalog;
    feedRecorded(catalog);
    catalog.setEagerTimes(QHash<QString, double>{{QStringLiteral("L2/1"), 2.0}, {QStringLiteral("L1/1"), 0.93}},
                          QStringLiteral("NVIDIA H200"));
    TasksPage page(&catalog);
    page.setRoofs(66900, 4800, QStringLiteral("NVIDIA H200"));
    page.resize(1280, 800);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    QVERIFY(page.showTask(QStringLiteral("L2/1")));
    QCoreApplication::processEvents();

    const QImage image = page.grab().toImage();
    QCOMPARE(image.size(), QSize(1280, 800) * page.devicePixelRatio());
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 2)
        for (int x = 0; x < image.width(); x += 2)
            colours.insert(image.pixel(x, y));
    QVERIFY2(colours.size() > 8, qPrintable(QStringLiteral("%1 colours").arg(colours.size())));

    // Every part laid out with room: list, search and detail are visible and not squeezed.
    const auto* view = page.findChild<QTreeView*>(QStringLiteral("taskList"));
    QVERIFY(view->isVisible());
    QVERIFY(view->height() > 300);
    QVERIFY(page.findChild<QTreeWidget*>(QStringLiteral("opChain"))->isVisible());
    QVERIFY(page.findChild<QLabel*>(QStringLiteral("flopsValue"))->isVisible());

    const QString path = QDir(QStringLiteral(KWB_TASKS_TEST_OUTPUT)).filePath(QStringLiteral("tasks_page.png"));
    QVERIFY(image.save(path));
    qInfo("screenshot: %s", qPrintable(path));
}

// Issue 37 item 5: at 250 tasks the bound filter says how many tasks each side holds, and a task
// whose ops the worker cannot count is a filter of its own, named on the list instead of a bound.
void TestTasksPage::boundFilterCountsAndUncountedTasks()
{
    TaskCatalog catalog;
    feedRecorded(catalog);
    QJsonObject partial;
    for (const QJsonValue& v : recordedAnalyses())
        if (v.toObject().value(QLatin1String("task")) == QLatin1String("L2/2"))
            partial = v.toObject();
    partial.insert(QStringLiteral("uncounted"),
                   QJsonArray{QJsonObject{{QStringLiteral("index"), 1},
                                          {QStringLiteral("op"), QStringLiteral("aten::kthvalue")},
                                          {QStringLiteral("line"), 3},
                                          {QStringLiteral("reason"), QStringLiteral("no rule for this op")}}});
    QVERIFY(catalog.applyAnalyzeResponse(partial));
    TasksPage page(&catalog);
    page.resize(1280, 800);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    auto* bound = page.findChild<QComboBox*>(QStringLiteral("boundFilter"));
    const auto* view = page.findChild<QTreeView*>(QStringLiteral("taskList"));
    // No roofs: no sides to count, but the uncounted task is offered.
    QCOMPARE(bound->itemText(1), QStringLiteral("Memory-bound"));
    QCOMPARE(bound->itemText(3), QStringLiteral("Ops not counted (1)"));

    // H200: ridge 13.9 FLOP/B; matrix-vector and matrix-scalar below it, six others above, L2/2
    // on neither side.
    page.setRoofs(66900, 4800, QStringLiteral("NVIDIA H200"));
    QCOMPARE(bound->count(), 4);
    QCOMPARE(bound->itemText(1), QStringLiteral("Memory-bound (2)"));
    QCOMPARE(bound->itemText(2), QStringLiteral("Compute-bound (6)"));
    bound->setCurrentIndex(2);
    QCOMPARE(viewIds(*view), (QStringList{QStringLiteral("L1/1"), QStringLiteral("L2/1"), QStringLiteral("L2/6"),
                                          QStringLiteral("L2/9"), QStringLiteral("L3/1"), QStringLiteral("L3/4")}));
    bound->setCurrentIndex(3);
    QCOMPARE(viewIds(*view), QStringList{QStringLiteral("L2/2")});
    QCOMPARE(page.findChild<QLabel*>(QStringLiteral("taskCount"))->text(), QStringLiteral("1 of 9 tasks match"));
    const QModelIndex flops = page.proxyModel()->index(0, TaskListModel::FlopsColumn, page.proxyModel()->index(0, 0));
    QCOMPARE(flops.data().toString(), QStringLiteral("cannot count: aten::kthvalue"));
    QVERIFY(page.showTask(QStringLiteral("L2/2")));
    QCoreApplication::processEvents();
    const QString path =
        QDir(QStringLiteral(KWB_TASKS_TEST_OUTPUT)).filePath(QStringLiteral("tasks_page_uncounted.png"));
    QVERIFY(page.grab().toImage().save(path));
    qInfo("screenshot: %s", qPrintable(path));

    // The task gets counted (a worker that knows the op): the choice goes, back to every task.
    for (const QJsonValue& v : recordedAnalyses())
        if (v.toObject().value(QLatin1String("task")) == QLatin1String("L2/2"))
            QVERIFY(catalog.applyAnalyzeResponse(v.toObject()));
    QCOMPARE(bound->count(), 3);
    QCOMPARE(bound->currentIndex(), 0);
    QCOMPARE(viewIds(*view).size(), 9);
}

// Issue 37 items 3 and 5: KernelBench's 250 tasks (100, 100, 50), made from the recorded nine by
// level, three of them KernelBench only as the converter writes them (no forward: nothing the
// analyser can count). The level filter counts each level, a KernelBench-only task says so in the
// list and in the detail instead of FLOPs, and "Ops not counted" finds exactly those.
void TestTasksPage::allOfKernelBenchWithKernelBenchOnlyTasks()
{
    const QJsonObject recorded = recordedTasks();
    QHash<int, QList<QJsonObject>> byLevel; // the recorded tasks of each level, the models for its 100 or 50
    for (const QJsonValue& v : recorded.value(QLatin1String("tasks")).toArray())
        byLevel[v.toObject().value(QLatin1String("level")).toInt()].append(v.toObject());
    QHash<QString, QJsonObject> analysisOf;
    for (const QJsonValue& v : recordedAnalyses())
        analysisOf.insert(v.toObject().value(QLatin1String("task")).toString(), v.toObject());
    const QHash<QString, QString> kernelBenchOnly{
        {QStringLiteral("L1/100"), QStringLiteral("line 22: an input made by torch.randint")},
        {QStringLiteral("L3/35"), QStringLiteral("line 18: nn.LSTM (no functional translation here)")},
        {QStringLiteral("L3/48"), QStringLiteral("line 53: needs einops: einops.rearrange is not translated here")}};
    QJsonArray tasks;
    QList<QJsonObject> analyses;
    for (const auto& [level, count] : {std::pair{1, 100}, std::pair{2, 100}, std::pair{3, 50}}) {
        for (int n = 1; n <= count; ++n) {
            QJsonObject t = byLevel.value(level).at(n % byLevel.value(level).size());
            const QString model = t.value(QLatin1String("id")).toString();
            const QString id = QStringLiteral("L%1/%2").arg(level).arg(n);
            t.insert(QStringLiteral("id"), id);
            t.insert(QStringLiteral("number"), n);
            if (kernelBenchOnly.contains(id)) {
                t.insert(QStringLiteral("kernelbench_only"), kernelBenchOnly.value(id));
                t.insert(QStringLiteral("forward"), QString());
                t.insert(QStringLiteral("reference_python"), QStringLiteral("class Model(nn.Module): ..."));
            } else {
                QJsonObject a = analysisOf.value(model);
                a.insert(QStringLiteral("task"), id);
                analyses.append(a);
            }
            tasks.append(t);
        }
    }
    QJsonObject response = recorded;
    response.insert(QStringLiteral("tasks"), tasks);
    TaskCatalog catalog;
    QVERIFY(catalog.applyTasksResponse(response));
    for (const QJsonObject& a : analyses)
        QVERIFY(catalog.applyAnalyzeResponse(a));
    TasksPage page(&catalog);
    page.resize(1440, 900);
    page.show();
    QVERIFY(QTest::qWaitForWindowExposed(&page));
    const auto* view = page.findChild<QTreeView*>(QStringLiteral("taskList"));
    auto* bound = page.findChild<QComboBox*>(QStringLiteral("boundFilter"));
    const QStringList uncounted{QStringLiteral("L1/100"), QStringLiteral("L3/35"), QStringLiteral("L3/48")};
    // No GPU, so no sides of a ridge: the tasks that cannot be counted are found all the same.
    QVERIFY(bound->isEnabled());
    const auto* boundItems = qobject_cast<const QStandardItemModel*>(bound->model());
    QVERIFY(!boundItems->item(1)->isEnabled() && !boundItems->item(2)->isEnabled());
    QCOMPARE(bound->itemText(3), QStringLiteral("Ops not counted (3)"));
    bound->setCurrentIndex(3);
    QCOMPARE(viewIds(*view), uncounted);
    bound->setCurrentIndex(0);
    page.setRoofs(66900, 4800, QStringLiteral("NVIDIA H200"));
    QVERIFY(boundItems->item(1)->isEnabled());
    QCOMPARE(viewIds(*view).size(), 250);
    QCOMPARE(labelText(page, "taskCount"), QStringLiteral("250 tasks"));
    auto* level = page.findChild<QComboBox*>(QStringLiteral("levelFilter"));
    QCOMPARE(level->itemText(1), QStringLiteral("Level 1 (100)"));
    QCOMPARE(level->itemText(2), QStringLiteral("Level 2 (100)"));
    QCOMPARE(level->itemText(3), QStringLiteral("Level 3 (50)"));

    QCOMPARE(bound->itemText(3), QStringLiteral("Ops not counted (3)"));
    bound->setCurrentIndex(3);
    QCOMPARE(viewIds(*view), uncounted);
    const QAbstractItemModel* proxy = page.proxyModel();
    const QModelIndex level3 = proxy->index(1, 0);
    QCOMPARE(proxy->index(1, TaskListModel::OpsColumn, level3).data().toString(), QStringLiteral("KernelBench only"));
    const QModelIndex flops = proxy->index(1, TaskListModel::FlopsColumn, level3);
    QCOMPARE(flops.data().toString(), QStringLiteral("not counted"));
    QVERIFY2(flops.data(Qt::ToolTipRole).toString().contains(QStringLiteral("needs einops")),
             qPrintable(flops.data(Qt::ToolTipRole).toString()));
    QVERIFY(page.showTask(QStringLiteral("L3/48")));
    QCoreApplication::processEvents();
    QVERIFY2(labelText(page, "analysisNote").startsWith(QStringLiteral("KernelBench only (line 53: needs einops")),
             qPrintable(labelText(page, "analysisNote")));
    QCOMPARE(labelText(page, "flopsValue"), QStringLiteral("–"));

    // Level 3 alone, every bound: its 50, the two KernelBench-only ones among them saying so.
    bound->setCurrentIndex(0);
    level->setCurrentIndex(level->findData(3));
    QCOMPARE(viewIds(*view).size(), 50);
    QCOMPARE(labelText(page, "taskCount"), QStringLiteral("50 of 250 tasks match"));
    const QString path = QDir(QStringLiteral(KWB_TASKS_TEST_OUTPUT)).filePath(QStringLiteral("tasks_page_250.png"));
    QVERIFY(page.grab().toImage().save(path));
    qInfo("screenshot: %s", qPrintable(path));
}

QTEST_MAIN(TestTasksPage)
#include "tst_taskspage.moc"
