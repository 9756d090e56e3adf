#include "app/runs/runlistmodel.h"

#include "core/run/runname.h"
#include "core/study/report.h"

#include <QJsonObject>
#include <QMap>

namespace kwb::app {

RunListEntry runListEntry(const RunStore& store, const RunInfo& info)
{
    RunListEntry entry;
    entry.info = info;
    const QList<EvaluationRecord> evaluations = store.evaluations(info.id);
    entry.evaluations = int(evaluations.size());
    // The report's own count (core/study/report.h): every task asked, those without an evaluation as failures.
    for (const TaskOutcome& outcome : runOutcomes(store, info, evaluations).outcomes) {
        ++entry.tasks;
        entry.correct += outcome.correct() ? 1 : 0;
    }
    return entry;
}

bool RunListModel::isRow(const QModelIndex& index) const
{
    // Views and QAbstractItemModelTester ask about invalid indexes too: not an error, no data.
    return index.isValid() && index.model() == this && !index.parent().isValid() && index.row() < m_entries.size() &&
           index.column() < ColumnCount;
}

RunListModel::RunListModel(QObject* parent)
    : QAbstractTableModel(parent)
{}

void RunListModel::clear()
{
    if (m_entries.isEmpty())
        return;
    beginResetModel();
    m_entries.clear();
    endResetModel();
    if (!m_checked.isEmpty()) {
        m_checked.clear();
        Q_EMIT checkedRunsChanged();
    }
}

QList<RunListEntry> RunListModel::readEntries(const RunStore& store)
{
    QList<RunListEntry> entries;
    if (store.isOpen())
        for (const RunInfo& info : store.runs())
            entries.append(runListEntry(store, info));
    return entries;
}

void RunListModel::reload(const RunStore& store)
{
    setEntries(readEntries(store));
}

void RunListModel::setEntries(const QList<RunListEntry>& fresh)
{
    QSet<qint64> freshIds;
    for (const RunListEntry& e : std::as_const(fresh))
        freshIds.insert(e.info.id);

    bool checksChanged = false;
    for (int i = int(m_entries.size()) - 1; i >= 0; --i) {
        const qint64 id = m_entries.at(i).info.id;
        if (freshIds.contains(id))
            continue;
        beginRemoveRows(QModelIndex(), i, i);
        m_entries.removeAt(i);
        endRemoveRows();
        checksChanged = m_checked.remove(id) || checksChanged;
    }
    // Both lists are in id order and the old one is now a subsequence of the new one.
    int row = 0;
    for (const RunListEntry& e : std::as_const(fresh)) {
        if (row < m_entries.size() && m_entries.at(row).info.id == e.info.id) {
            const RunListEntry& old = m_entries.at(row);
            const bool changed = old.info.name != e.info.name || old.info.status != e.info.status ||
                                 old.info.regime != e.info.regime || old.tasks != e.tasks || old.correct != e.correct ||
                                 old.evaluations != e.evaluations;
            m_entries[row] = e;
            if (changed)
                Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
        } else {
            beginInsertRows(QModelIndex(), row, row);
            m_entries.insert(row, e);
            endInsertRows();
        }
        ++row;
    }
    if (checksChanged)
        Q_EMIT checkedRunsChanged();
}

int RunListModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_entries.size());
}

int RunListModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunListModel::displayValue(const RunListEntry& entry, int column) const
{
    switch (column) {
    case IdColumn: return QStringLiteral("#%1").arg(entry.info.id);
    case NameColumn:
        return runDescription(entry.info); // what sets it apart (runname.h), the stored name in the tooltip
    case RegimeColumn: return entry.info.regime;
    case CreatedColumn: return entry.info.created.toLocalTime().toString(QStringLiteral("yyyy-MM-dd HH:mm"));
    case StatusColumn: return entry.info.status;
    case TasksColumn: return QString::number(entry.tasks);
    case CorrectColumn:
        return entry.tasks > 0 ? QStringLiteral("%1 %").arg(100.0 * entry.correct / entry.tasks, 0, 'f', 1)
                               : QStringLiteral("–");
    }
    return {};
}

QVariant RunListModel::sortValue(const RunListEntry& entry, int column) const
{
    switch (column) {
    case IdColumn: return entry.info.id;
    case CreatedColumn: return entry.info.created;
    case TasksColumn: return entry.tasks;
    case CorrectColumn: return entry.tasks > 0 ? 100.0 * entry.correct / entry.tasks : -1.0;
    default: return displayValue(entry, column);
    }
}

QVariant RunListModel::data(const QModelIndex& index, int role) const
{
    if (!isRow(index))
        return {};
    const RunListEntry& entry = m_entries.at(index.row());
    switch (role) {
    case Qt::DisplayRole: return displayValue(entry, index.column());
    case Qt::CheckStateRole:
        if (index.column() == IdColumn)
            return m_checked.contains(entry.info.id) ? Qt::Checked : Qt::Unchecked;
        return {};
    case Qt::TextAlignmentRole:
        if (index.column() == TasksColumn || index.column() == CorrectColumn)
            return int(Qt::AlignRight | Qt::AlignVCenter);
        return {};
    case Qt::ToolTipRole:
        if (index.column() == CorrectColumn || index.column() == TasksColumn)
            return tr("%1 of %2 tasks correct (%3 evaluations)")
                .arg(entry.correct)
                .arg(entry.tasks)
                .arg(entry.evaluations);
        if (index.column() == IdColumn)
            return tr("Check to compare this run on the results page");
        if (index.column() == NameColumn)
            return entry.info.name;
        return {};
    case RunIdRole: return entry.info.id;
    case SortRole: return sortValue(entry, index.column());
    }
    return {};
}

bool RunListModel::setData(const QModelIndex& index, const QVariant& value, int role)
{
    if (!isRow(index) || role != Qt::CheckStateRole || index.column() != IdColumn)
        return false;
    const qint64 id = m_entries.at(index.row()).info.id;
    const bool checked = value.value<Qt::CheckState>() == Qt::Checked || value.toInt() == Qt::Checked;
    if (checked == m_checked.contains(id))
        return true;
    if (checked)
        m_checked.insert(id);
    else
        m_checked.remove(id);
    Q_EMIT dataChanged(index, index, {Qt::CheckStateRole});
    Q_EMIT checkedRunsChanged();
    return true;
}

Qt::ItemFlags RunListModel::flags(const QModelIndex& index) const
{
    if (!isRow(index))
        return Qt::NoItemFlags;
    Qt::ItemFlags f = Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemNeverHasChildren;
    if (index.column() == IdColumn)
        f |= Qt::ItemIsUserCheckable;
    return f;
}

QVariant RunListModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return QAbstractTableModel::headerData(section, orientation, role);
    switch (section) {
    case IdColumn: return tr("Run");
    case NameColumn: return tr("Name");
    case RegimeColumn: return tr("Regime");
    case CreatedColumn: return tr("Created");
    case StatusColumn: return tr("Status");
    case TasksColumn: return tr("Tasks");
    case CorrectColumn: return tr("Correct");
    }
    return {};
}

qint64 RunListModel::runId(int row) const
{
    return row >= 0 && row < m_entries.size() ? m_entries.at(row).info.id : 0;
}

int RunListModel::rowOfRun(qint64 runId) const
{
    for (int i = 0; i < m_entries.size(); ++i)
        if (m_entries.at(i).info.id == runId)
            return i;
    return -1;
}

const RunListEntry* RunListModel::entry(int row) const
{
    return row >= 0 && row < m_entries.size() ? &m_entries.at(row) : nullptr;
}

QList<qint64> RunListModel::checkedRunIds() const
{
    QList<qint64> ids;
    for (const RunListEntry& e : m_entries)
        if (m_checked.contains(e.info.id))
            ids.append(e.info.id);
    return ids;
}

void RunListModel::setChecked(qint64 runId, bool checked)
{
    const int row = rowOfRun(runId);
    if (row >= 0)
        setData(index(row, IdColumn), checked ? Qt::Checked : Qt::Unchecked, Qt::CheckStateRole);
}

void RunListModel::setAllChecked(bool checked)
{
    QSet<qint64> wanted;
    if (checked)
        for (const RunListEntry& e : std::as_const(m_entries))
            wanted.insert(e.info.id);
    if (wanted == m_checked)
        return;
    m_checked = wanted;
    if (!m_entries.isEmpty())
        Q_EMIT dataChanged(index(0, IdColumn), index(int(m_entries.size()) - 1, IdColumn), {Qt::CheckStateRole});
    Q_EMIT checkedRunsChanged();
}

} // namespace kwb::app
