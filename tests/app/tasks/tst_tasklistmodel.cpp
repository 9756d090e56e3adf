// TaskListModel (checked by QAbstractItemModelTester through resets, analyses arriving and eager
// times) and TaskFilterProxyModel: search over id, title and op names, level, category and bound
// filters, sorting that keeps levels in order.

#include "taskfixtures.h"

#include "app/tasks/taskfilterproxymodel.h"
#include "app/tasks/tasklistmodel.h"
#include "core/tasks/taskcatalog.h"

#include <QAbstractItemModelTester>
#include <QJsonArray>
#include <QJsonObject>
#include <QSignalSpy>
#include <QTest>

using namespace kwb;
using namespace kwb::app;
using namespace kwb::test;

namespace {

// The task ids a model shows, level by level, in display order.
QStringList visibleIds(const QAbstractItemModel& model)
{
    QStringList ids;
    for (int level = 0; level < model.rowCount(); ++level) {
        const QModelIndex parent = model.index(level, 0);
        for (int row = 0; row < model.rowCount(parent); ++row)
            ids << model.index(row, 0, parent).data(TaskListModel::TaskIdRole).toString();
    }
    return ids;
}

QStringList ids(std::initializer_list<const char*> list)
{
    QStringList out;
    for (const char* id : list)
        out << QString::fromLatin1(id);
    return out;
}

} // namespace

class TestTaskListModel : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void treeByLevel();
    void followsTheCatalog();
    void searchById_Title_AndOps();
    void levelCategoryAndBoundFilters();
    void sortingKeepsLevelsInOrder();
};

void TestTaskListModel::treeByLevel()
{
    TaskCatalog catalog;
    TaskListModel model(&catalog);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    QCOMPARE(model.rowCount(), 0);
    feedRecorded(catalog);

    QCOMPARE(model.rowCount(), 3);
    QCOMPARE(model.columnCount(), int(TaskListModel::ColumnCount));
    const QModelIndex level2 = model.index(1, 0);
    QVERIFY(level2.data(TaskListModel::IsLevelRole).toBool());
    QCOMPARE(level2.data(TaskListModel::LevelRole).toInt(), 2);
    QCOMPARE(level2.data().toString(), QStringLiteral("Level 2 · Simple fusion patterns · 4 tasks"));
    QCOMPARE(model.rowCount(level2), 4);
    QCOMPARE(model.rowCount(model.index(0, 0)), 3);
    QCOMPARE(model.rowCount(model.index(2, 0)), 2);
    QVERIFY(!(model.flags(level2) & Qt::ItemIsSelectable));

    const QModelIndex l21 = model.indexOfTask(QStringLiteral("L2/1"));
    QCOMPARE(l21.parent(), level2);
    QCOMPARE(l21.row(), 0);
    QVERIFY(model.flags(l21) & Qt::ItemIsSelectable);
    QCOMPARE(l21.data().toString(), QStringLiteral("L2/1"));
    QCOMPARE(l21.siblingAtColumn(TaskListModel::TitleColumn).data().toString(),
             QStringLiteral("Conv2d, ReLU, bias add"));
    QCOMPARE(l21.siblingAtColumn(TaskListModel::OpsColumn).data().toString(),
             QStringLiteral("conv2d \u2192 relu \u2192 add"));
    QCOMPARE(l21.siblingAtColumn(TaskListModel::FlopsColumn).data().toString(), QStringLiteral("300.4 GFLOP"));
    QCOMPARE(l21.siblingAtColumn(TaskListModel::IntensityColumn).data().toString(), QStringLiteral("190.4"));
    QVERIFY(!l21.siblingAtColumn(TaskListModel::EagerColumn).data().isValid());
    QCOMPARE(l21.data(TaskListModel::CategoriesRole).toStringList(),
             (QStringList{QStringLiteral("conv"), QStringLiteral("elementwise")}));
    QVERIFY(l21.data(TaskListModel::OpNamesRole).toStringList().contains(QStringLiteral("aten::conv2d")));

    // L3/4 (LeNet-5) has 12 ops: the chain is cut after four with the rest counted.
    const QModelIndex lenet = model.indexOfTask(QStringLiteral("L3/4"), TaskListModel::OpsColumn);
    QCOMPARE(lenet.data().toString(), QStringLiteral("conv2d \u2192 relu \u2192 max_pool2d \u2192 conv2d \u2026 (+8)"));
    QVERIFY(!model.indexOfTask(QStringLiteral("L9/9")).isValid());
}

void TestTaskListModel::followsTheCatalog()
{
    TaskCatalog catalog;
    TaskListModel model(&catalog);
    QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
    feedRecorded(catalog, false);

    const QModelIndex ops = model.indexOfTask(QStringLiteral("L2/1"), TaskListModel::OpsColumn);
    QCOMPARE(ops.data().toString(), QStringLiteral("analysing…"));
    QVERIFY(!ops.data(TaskListModel::IntensityFusedRole).isValid());

    QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
    for (const QJsonValue& v : recordedAnalyses())
        if (v.toObject().value(QLatin1String("task")) == QLatin1String("L2/1"))
            QVERIFY(catalog.applyAnalyzeResponse(v.toObject()));
    QCOMPARE(changed.count(), 1);
    QCOMPARE(changed.first().at(0).toModelIndex(), ops.siblingAtColumn(0));
    QCOMPARE(changed.first().at(1).toModelIndex(), ops.siblingAtColumn(TaskListModel::ColumnCount - 1));
    QCOMPARE(ops.data().toString(), QStringLiteral("conv2d \u2192 relu \u2192 add"));

    // A failed analysis says so in the list, with the reason as tooltip.
    QVERIFY(catalog.applyAnalyzeResponse(
        QJsonObject{{QStringLiteral("ok"), false},
                    {QStringLiteral("task"), QStringLiteral("L1/4")},
                    {QStringLiteral("error"), QJsonObject{{QStringLiteral("code"), QStringLiteral("task_error")},
                                                          {QStringLiteral("message"), QStringLiteral("bad shape")}}}}));
    const QModelIndex failed = model.indexOfTask(QStringLiteral("L1/4"), TaskListModel::OpsColumn);
    QCOMPARE(failed.data().toString(), QStringLiteral("analysis failed"));
    QCOMPARE(failed.data(Qt::ToolTipRole).toString(), QStringLiteral("task_error: bad shape"));

    // An analysis with uncounted ops shows which instead of FLOPs and intensity (its totals leave
    // them out), and gives the filters and the sort nothing to go on.
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
    const QModelIndex flops = model.indexOfTask(QStringLiteral("L2/2"), TaskListModel::FlopsColumn);
    QCOMPARE(flops.data().toString(), QStringLiteral("cannot count: aten::kthvalue"));
    QVERIFY(
        flops.data(Qt::ToolTipRole).toString().contains(QLatin1String("aten::kthvalue (line 3): no rule for this op")));
    QVERIFY(!flops.data(TaskListModel::FlopsRole).isValid());
    QVERIFY(!flops.data(TaskListModel::IntensityFusedRole).isValid());
    QVERIFY(!flops.siblingAtColumn(TaskListModel::IntensityColumn).data().isValid());
    QCOMPARE(flops.data(TaskListModel::SortRole).toDouble(), -1.0);
    QVERIFY(flops.siblingAtColumn(TaskListModel::OpsColumn)
                .data()
                .toString()
                .startsWith(QLatin1String("conv_transpose2d")));

    // Eager times change the eager column of every level.
    changed.clear();
    catalog.setEagerTimes(QHash<QString, double>{{QStringLiteral("L2/1"), 2.0}}, QStringLiteral("NVIDIA H200"));
    QCOMPARE(changed.count(), 3);
    const QModelIndex eager = model.indexOfTask(QStringLiteral("L2/1"), TaskListModel::EagerColumn);
    QCOMPARE(eager.data().toString(), QStringLiteral("2.00 ms"));
    QCOMPARE(eager.data(TaskListModel::EagerMsRole).toDouble(), 2.0);
    QCOMPARE(eager.data(Qt::ToolTipRole).toString(), QStringLiteral("Mean eager reference time on NVIDIA H200"));

    // A new task list resets the model; the tester checks the reset's consistency.
    QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
    QVERIFY(catalog.applyTasksResponse(recordedBadTasks()));
    QCOMPARE(reset.count(), 1);
    QCOMPARE(model.rowCount(), 1);
    QCOMPARE(visibleIds(model), ids({"L1/1"}));
}

void TestTaskListModel::searchById_Title_AndOps()
{
    TaskCatalog catalog;
    TaskListModel model(&catalog);
    TaskFilterProxyModel proxy;
    proxy.setSourceModel(&model);
    QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    feedRecorded(catalog);
    proxy.sort(TaskListModel::IdColumn);
    QCOMPARE(proxy.acceptedTaskCount(), 9);
    QVERIFY(!proxy.isFiltering());

    // "conv": titles (Conv2d, ConvTranspose2d, Conv3d) and LeNet-5, whose title does not say it
    // but whose ops are conv2d.
    proxy.setSearchText(QStringLiteral("conv"));
    QVERIFY(proxy.isFiltering());
    QCOMPARE(visibleIds(proxy), ids({"L2/1", "L2/2", "L2/6", "L3/4"}));
    QCOMPARE(proxy.rowCount(), 2); // level 1 has no conv task: its row hides

    proxy.setSearchText(QStringLiteral("  CONV   relu "));
    QCOMPARE(visibleIds(proxy), ids({"L2/1", "L3/4"}));
    proxy.setSearchText(QStringLiteral("aten::softmax"));
    QCOMPARE(visibleIds(proxy), ids({"L2/6"}));
    proxy.setSearchText(QStringLiteral("L3/"));
    QCOMPARE(visibleIds(proxy), ids({"L3/1", "L3/4"}));
    proxy.setSearchText(QStringLiteral("matrix"));
    QCOMPARE(visibleIds(proxy), ids({"L1/1", "L1/4", "L1/5"}));
    proxy.setSearchText(QStringLiteral("linear"));
    QCOMPARE(visibleIds(proxy), ids({"L2/9", "L3/1", "L3/4"}));
    proxy.setSearchText(QStringLiteral("winograd"));
    QCOMPARE(proxy.rowCount(), 0);
    QCOMPARE(proxy.acceptedTaskCount(), 0);
    proxy.setSearchText(QString());
    QCOMPARE(proxy.acceptedTaskCount(), 9);
}

void TestTaskListModel::levelCategoryAndBoundFilters()
{
    TaskCatalog catalog;
    TaskListModel model(&catalog);
    TaskFilterProxyModel proxy;
    proxy.setSourceModel(&model);
    QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    feedRecorded(catalog);
    proxy.sort(TaskListModel::IdColumn);

    proxy.setLevel(2);
    QCOMPARE(visibleIds(proxy), ids({"L2/1", "L2/2", "L2/6", "L2/9"}));
    QCOMPARE(proxy.rowCount(), 1);
    proxy.setSearchText(QStringLiteral("conv"));
    QCOMPARE(visibleIds(proxy), ids({"L2/1", "L2/2", "L2/6"}));
    proxy.setSearchText(QString());
    proxy.setLevel(0);

    proxy.setCategory(QStringLiteral("matmul"));
    QCOMPARE(visibleIds(proxy), ids({"L1/1", "L1/4", "L2/9", "L3/1", "L3/4"}));
    proxy.setCategory(QStringLiteral("pool"));
    QCOMPARE(visibleIds(proxy), ids({"L2/6", "L3/4"}));
    proxy.setCategory(QString());

    // The bound filter needs a ridge point; without one it lets everything through.
    proxy.setBound(TaskFilterProxyModel::Bound::Memory);
    QCOMPARE(proxy.acceptedTaskCount(), 9);
    QVERIFY(!proxy.isFiltering());
    // H200: 66.9 TFLOP/s FP32 over 4.8 TB/s, a ridge at 13.9 FLOP/B. Matrix-vector (0.50) and
    // matrix-scalar (0.125) fall below it; everything else is above.
    proxy.setRidgeIntensity(66900.0 / 4800.0);
    QVERIFY(proxy.isFiltering());
    QCOMPARE(visibleIds(proxy), ids({"L1/4", "L1/5"}));
    proxy.setBound(TaskFilterProxyModel::Bound::Compute);
    QCOMPARE(visibleIds(proxy), ids({"L1/1", "L2/1", "L2/2", "L2/6", "L2/9", "L3/1", "L3/4"}));
    // L2/2 at 58.8 FLOP/B fused sits below a ridge of 100.
    proxy.setRidgeIntensity(100);
    QCOMPARE(visibleIds(proxy), ids({"L1/1", "L2/1", "L2/6", "L2/9", "L3/4"}));

    proxy.clearFilters();
    QVERIFY(!proxy.isFiltering());
    QCOMPARE(proxy.acceptedTaskCount(), 9);
}

void TestTaskListModel::sortingKeepsLevelsInOrder()
{
    TaskCatalog catalog;
    TaskListModel model(&catalog);
    TaskFilterProxyModel proxy;
    proxy.setSourceModel(&model);
    QAbstractItemModelTester tester(&proxy, QAbstractItemModelTester::FailureReportingMode::QtTest);
    feedRecorded(catalog);

    proxy.sort(TaskListModel::FlopsColumn, Qt::DescendingOrder);
    QCOMPARE(proxy.index(0, 0).data(TaskListModel::LevelRole).toInt(), 1);
    QCOMPARE(proxy.index(2, 0).data(TaskListModel::LevelRole).toInt(), 3);
    QCOMPARE(visibleIds(proxy), ids({"L1/1", "L1/4", "L1/5", "L2/1", "L2/2", "L2/9", "L2/6", "L3/1", "L3/4"}));

    proxy.sort(TaskListModel::IntensityColumn, Qt::AscendingOrder);
    QCOMPARE(visibleIds(proxy), ids({"L1/5", "L1/4", "L1/1", "L2/2", "L2/6", "L2/1", "L2/9", "L3/1", "L3/4"}));

    // Ids sort by number, not as text (L1/10 after L1/9).
    QCOMPARE(model.indexOfTask(QStringLiteral("L1/4")).data(TaskListModel::SortRole).toInt(), 100004);
    proxy.sort(TaskListModel::IdColumn, Qt::DescendingOrder);
    QCOMPARE(visibleIds(proxy), ids({"L1/5", "L1/4", "L1/1", "L2/9", "L2/6", "L2/2", "L2/1", "L3/4", "L3/1"}));
}

QTEST_MAIN(TestTaskListModel)
#include "tst_tasklistmodel.moc"
