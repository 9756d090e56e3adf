#include "app/tasks/tasklistmodel.h"

#include "app/tasks/taskformat.h"
#include "core/tasks/taskcatalog.h"

#include <QFont>
#include <QStringList>

#include <algorithm>
#include <optional>

namespace kwb::app {

namespace {

// Task rows carry their level row + 1 in the internal id; level rows carry 0.
constexpr quintptr kLevelRowId = 0;

QStringList shortOpNames(const TaskInfo& task)
{
    QStringList names;
    for (const TaskOp& op : task.analysis.ops)
        names << op.shortName();
    return names;
}

} // namespace

TaskListModel::TaskListModel(TaskCatalog* catalog, QObject* parent)
    : QAbstractItemModel(parent)
    , m_catalog(catalog)
{
    if (catalog) {
        connect(catalog, &TaskCatalog::tasksReset, this, [this] {
            beginResetModel();
            rebuild();
            endResetModel();
        });
        connect(catalog, &TaskCatalog::taskUpdated, this, &TaskListModel::onTaskUpdated);
        connect(catalog, &TaskCatalog::eagerTimesChanged, this, &TaskListModel::onEagerTimesChanged);
        connect(catalog, &QObject::destroyed, this, [this] {
            beginResetModel();
            m_levels.clear();
            m_children.clear();
            endResetModel();
        });
    }
    rebuild();
}

QString TaskListModel::levelName(int level)
{
    switch (level) {
    case 1: return tr("Single-kernel operators");
    case 2: return tr("Simple fusion patterns");
    case 3: return tr("Full model architectures");
    default: return tr("Level %1").arg(level);
    }
}

void TaskListModel::rebuild()
{
    m_levels.clear();
    m_children.clear();
    if (!m_catalog)
        return;
    const QList<TaskInfo>& tasks = m_catalog->tasks();
    for (int i = 0; i < tasks.size(); ++i) {
        const int level = tasks.at(i).level;
        auto it = std::lower_bound(m_levels.begin(), m_levels.end(), level);
        const int row = int(it - m_levels.begin());
        if (it == m_levels.end() || *it != level) {
            m_levels.insert(row, level);
            m_children.insert(row, QList<int>());
        }
        m_children[row].append(i);
    }
}

QModelIndex TaskListModel::indexOfTask(const QString& id, int column) const
{
    if (!m_catalog)
        return QModelIndex();
    const int catalogIndex = m_catalog->indexOf(id);
    if (catalogIndex < 0)
        return QModelIndex();
    for (int levelRow = 0; levelRow < m_children.size(); ++levelRow) {
        const int row = int(m_children.at(levelRow).indexOf(catalogIndex));
        if (row >= 0)
            return createIndex(row, column, quintptr(levelRow + 1));
    }
    return QModelIndex();
}

void TaskListModel::onTaskUpdated(const QString& id)
{
    const QModelIndex first = indexOfTask(id, 0);
    if (first.isValid())
        Q_EMIT dataChanged(first, first.siblingAtColumn(ColumnCount - 1));
}

void TaskListModel::onEagerTimesChanged()
{
    for (int levelRow = 0; levelRow < m_children.size(); ++levelRow) {
        const int rows = int(m_children.at(levelRow).size());
        if (rows == 0)
            continue;
        const QModelIndex parentIndex = index(levelRow, 0);
        Q_EMIT dataChanged(index(0, EagerColumn, parentIndex), index(rows - 1, EagerColumn, parentIndex));
    }
}

QModelIndex TaskListModel::index(int row, int column, const QModelIndex& parent) const
{
    if (row < 0 || column < 0 || column >= ColumnCount)
        return QModelIndex();
    if (!parent.isValid())
        return row < m_levels.size() ? createIndex(row, column, kLevelRowId) : QModelIndex();
    if (parent.internalId() != kLevelRowId || parent.column() != 0)
        return QModelIndex();
    const int levelRow = parent.row();
    if (levelRow >= m_children.size() || row >= m_children.at(levelRow).size())
        return QModelIndex();
    return createIndex(row, column, quintptr(levelRow + 1));
}

QModelIndex TaskListModel::parent(const QModelIndex& child) const
{
    if (!child.isValid() || child.internalId() == kLevelRowId)
        return QModelIndex();
    return createIndex(int(child.internalId() - 1), 0, kLevelRowId);
}

int TaskListModel::rowCount(const QModelIndex& parent) const
{
    if (!parent.isValid())
        return int(m_levels.size());
    if (parent.internalId() != kLevelRowId || parent.column() != 0 || parent.row() >= m_children.size())
        return 0;
    return int(m_children.at(parent.row()).size());
}

int TaskListModel::columnCount(const QModelIndex&) const
{
    return ColumnCount;
}

const TaskInfo* TaskListModel::taskAt(const QModelIndex& index) const
{
    if (!m_catalog || !index.isValid() || index.internalId() == kLevelRowId)
        return nullptr;
    const int levelRow = int(index.internalId() - 1);
    if (levelRow >= m_children.size() || index.row() >= m_children.at(levelRow).size())
        return nullptr;
    const int catalogIndex = m_children.at(levelRow).at(index.row());
    if (catalogIndex >= m_catalog->tasks().size())
        return nullptr;
    return &m_catalog->tasks().at(catalogIndex);
}

QVariant TaskListModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return QVariant();
    if (index.internalId() == kLevelRowId)
        return levelData(index.row(), index.column(), role);
    const TaskInfo* task = taskAt(index);
    return task ? taskData(*task, index.column(), role) : QVariant();
}

QVariant TaskListModel::levelData(int levelRow, int column, int role) const
{
    const int level = m_levels.at(levelRow);
    const int count = int(m_children.at(levelRow).size());
    switch (role) {
    case Qt::DisplayRole:
        if (column == IdColumn) {
            const QString tasks = count == 1 ? tr("1 task") : tr("%1 tasks").arg(count);
            return tr("Level %1 · %2 · %3").arg(level).arg(levelName(level), tasks);
        }
        return QVariant();
    case Qt::FontRole:
        if (column == IdColumn) {
            QFont font;
            font.setBold(true);
            return font;
        }
        return QVariant();
    case LevelRole:
    case SortRole: return level;
    case IsLevelRole: return true;
    case TaskIdRole: return QString();
    default: return QVariant();
    }
}

QVariant TaskListModel::taskData(const TaskInfo& task, int column, int role) const
{
    // An analysis that could not count every op has totals that leave those ops out: its FLOPs
    // and intensity are not shown, sorted or filtered on (docs/roofline.md).
    const bool analysed = task.hasAnalysis() && task.analysis.complete();
    const bool uncounted = task.hasAnalysis() && !task.analysis.complete();
    const std::optional<EagerTime> eager = m_catalog->eagerTime(task.id);
    switch (role) {
    case Qt::DisplayRole:
        switch (column) {
        case IdColumn: return task.id;
        case TitleColumn: return task.title;
        case OpsColumn:
            if (task.isKernelBenchOnly())
                return tr("KernelBench only");
            if (task.analysisState == TaskInfo::Analysis::Failed)
                return tr("analysis failed");
            return task.hasAnalysis() ? taskformat::opChain(shortOpNames(task), 4) : tr("analysing…");
        case FlopsColumn:
            if (uncounted)
                return task.analysis.uncountedText();
            if (task.isKernelBenchOnly())
                return tr("not counted");
            return analysed ? taskformat::si(task.analysis.flops, QStringLiteral("FLOP")) : QVariant();
        case IntensityColumn: return analysed ? taskformat::intensity(task.analysis.intensityFused) : QVariant();
        case EagerColumn: return eager ? taskformat::milliseconds(eager->meanMs) : QVariant();
        }
        return QVariant();
    case Qt::ToolTipRole:
        switch (column) {
        case IdColumn:
        case TitleColumn:
            return task.description.isEmpty() ? task.title : task.title + QStringLiteral("\n\n") + task.description;
        case OpsColumn:
            if (task.analysisState == TaskInfo::Analysis::Failed)
                return task.analysisError;
            return task.hasAnalysis() ? taskformat::opChain(shortOpNames(task), 1000) : QVariant();
        case FlopsColumn:
            if (task.isKernelBenchOnly())
                return tr("No TorchScript forward to count (%1), so this task has no FLOPs, bytes or point on the "
                          "roofline")
                    .arg(task.analysisError);
            if (uncounted) {
                QStringList lines;
                for (const UncountedOp& u : task.analysis.uncounted)
                    lines << (u.line > 0 ? tr("%1 (line %2): %3").arg(u.op).arg(u.line).arg(u.reason)
                                         : tr("%1: %2").arg(u.op, u.reason));
                return tr("The worker cannot count these ops, so this task has no FLOPs, bytes or point on the "
                          "roofline:\n%1")
                    .arg(lines.join(QLatin1Char('\n')));
            }
            return analysed ? taskformat::exact(task.analysis.flops, QStringLiteral("FLOP")) : QVariant();
        case IntensityColumn:
            return analysed ? tr("%1 FLOP/B with every tensor moved once (fused); %2 FLOP/B op by op")
                                  .arg(taskformat::intensity(task.analysis.intensityFused),
                                       taskformat::intensity(task.analysis.intensityUnfused))
                            : QVariant();
        case EagerColumn:
            return eager ? tr("Mean eager reference time on %1").arg(m_catalog->eagerGpuName())
                         : tr("Not measured on this GPU yet");
        }
        return QVariant();
    case Qt::TextAlignmentRole:
        if (column == FlopsColumn || column == IntensityColumn || column == EagerColumn)
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
        return QVariant();
    case TaskIdRole: return task.id;
    case LevelRole: return task.level;
    case IsLevelRole: return false;
    case TitleRole: return task.title;
    case OpNamesRole: {
        QStringList names;
        for (const TaskOp& op : task.analysis.ops)
            names << op.op << op.shortName();
        return names;
    }
    case CategoriesRole: return task.categories();
    case FlopsRole: return analysed ? QVariant(task.analysis.flops) : QVariant();
    case IntensityFusedRole: return analysed ? QVariant(task.analysis.intensityFused) : QVariant();
    case EagerMsRole: return eager ? QVariant(eager->meanMs) : QVariant();
    case UncountedRole: return uncounted || task.isKernelBenchOnly();
    case SortRole:
        switch (column) {
        case IdColumn: return task.level * 100000 + task.number;
        case TitleColumn: return task.title;
        case OpsColumn: return task.hasAnalysis() ? task.analysis.opCount : -1;
        case FlopsColumn: return analysed ? task.analysis.flops : -1.0;
        case IntensityColumn: return analysed ? task.analysis.intensityFused : -1.0;
        case EagerColumn: return eager ? eager->meanMs : -1.0;
        }
        return QVariant();
    default: return QVariant();
    }
}

QVariant TaskListModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || section < 0 || section >= ColumnCount)
        return QVariant();
    if (role == Qt::DisplayRole) {
        switch (section) {
        case IdColumn: return tr("Task");
        case TitleColumn: return tr("Title");
        case OpsColumn: return tr("Ops");
        case FlopsColumn: return tr("FLOPs");
        case IntensityColumn: return tr("FLOP/B");
        case EagerColumn: return tr("Eager");
        }
    } else if (role == Qt::ToolTipRole) {
        switch (section) {
        case OpsColumn: return tr("The reference forward's top-level ops, in order");
        case FlopsColumn: return tr("Floating-point operations of one forward at full scale");
        case IntensityColumn:
            return tr("Arithmetic intensity with every input, parameter and output moved once (fused)");
        case EagerColumn:
            return tr("Mean time of the eager PyTorch reference on the current GPU, from the open run database");
        }
    } else if (role == Qt::TextAlignmentRole) {
        if (section == FlopsColumn || section == IntensityColumn || section == EagerColumn)
            return QVariant(Qt::AlignRight | Qt::AlignVCenter);
    }
    return QVariant();
}

Qt::ItemFlags TaskListModel::flags(const QModelIndex& index) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return Qt::NoItemFlags;
    if (index.internalId() == kLevelRowId)
        return Qt::ItemIsEnabled;
    return Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
}

} // namespace kwb::app
