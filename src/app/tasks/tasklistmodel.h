#pragma once
// The catalog's tasks as a two-level tree: one row per KernelBench level, its tasks below. It
// follows the catalog live: a new task list resets it, an analysis or an eager time that arrives
// changes the row's cells in place.

#include "core/tasks/taskcatalog.h"

#include <QAbstractItemModel>
#include <QList>
#include <QPointer>

namespace kwb::app {

class TaskListModel : public QAbstractItemModel
{
    Q_OBJECT
public:
    enum Column { IdColumn, TitleColumn, OpsColumn, FlopsColumn, IntensityColumn, EagerColumn, ColumnCount };
    Q_ENUM(Column)

    enum Role {
        TaskIdRole = Qt::UserRole + 1, ///< QString; empty on level rows
        LevelRole,                     ///< int, on both kinds of row
        IsLevelRole,                   ///< bool
        TitleRole,                     ///< QString
        OpNamesRole,                   ///< QStringList: "aten::conv2d" and "conv2d" for each op
        CategoriesRole,                ///< QStringList: op categories, each once
        FlopsRole,                     ///< double; invalid until analysed
        IntensityFusedRole,            ///< double FLOP/B; invalid until analysed
        EagerMsRole,                   ///< double; invalid when not measured on the current GPU
        UncountedRole,                 ///< bool: ops the worker cannot count (some, or all: KernelBench only)
        SortRole,                      ///< a number or text that sorts as the column should
    };

    explicit TaskListModel(TaskCatalog* catalog, QObject* parent = nullptr);

    TaskCatalog* catalog() const { return m_catalog; }

    /// Kernelbench's names for its levels: 1 single-kernel operators, 2 simple fusion patterns,
    /// 3 full model architectures.
    static QString levelName(int level);

    /// The index of a task in column `column`, invalid when the model does not hold it.
    QModelIndex indexOfTask(const QString& id, int column = IdColumn) const;

    QModelIndex index(int row, int column, const QModelIndex& parent = QModelIndex()) const override;
    QModelIndex parent(const QModelIndex& child) const override;
    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;

private:
    void rebuild();
    void onTaskUpdated(const QString& id);
    void onEagerTimesChanged();
    const TaskInfo* taskAt(const QModelIndex& index) const;
    QVariant levelData(int levelRow, int column, int role) const;
    QVariant taskData(const TaskInfo& task, int column, int role) const;

    QPointer<TaskCatalog> m_catalog;
    QList<int> m_levels;          ///< level numbers, ascending: the top rows
    QList<QList<int>> m_children; ///< per level row: catalog indices of its tasks
};

} // namespace kwb::app
