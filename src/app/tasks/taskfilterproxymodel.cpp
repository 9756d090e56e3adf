#include "app/tasks/taskfilterproxymodel.h"

#include "core/tasks/kernelbound.h"

#include "app/tasks/tasklistmodel.h"

#include <algorithm>

namespace kwb::app {

TaskFilterProxyModel::TaskFilterProxyModel(QObject* parent)
    : QSortFilterProxyModel(parent)
{
    setRecursiveFilteringEnabled(true);
    setSortRole(TaskListModel::SortRole);
    setSortCaseSensitivity(Qt::CaseInsensitive);
    // Sorting also follows cells that change (an analysis arriving).
    setDynamicSortFilter(true);
}

void TaskFilterProxyModel::setSearchText(const QString& text)
{
    const QStringList words = text.simplified().split(QLatin1Char(' '), Qt::SkipEmptyParts);
    if (words == m_words)
        return;
    m_words = words;
    refilter();
}

void TaskFilterProxyModel::setLevel(int level)
{
    if (level == m_level)
        return;
    m_level = level;
    refilter();
}

void TaskFilterProxyModel::setCategory(const QString& category)
{
    if (category == m_category)
        return;
    m_category = category;
    refilter();
}

void TaskFilterProxyModel::setBound(Bound bound)
{
    if (bound == m_bound)
        return;
    m_bound = bound;
    refilter();
}

void TaskFilterProxyModel::setRidgeIntensity(double flopPerByte)
{
    if (flopPerByte == m_ridge)
        return;
    m_ridge = flopPerByte > 0 ? flopPerByte : 0;
    refilter();
}

bool TaskFilterProxyModel::isFiltering() const
{
    return !m_words.isEmpty() || m_level != 0 || !m_category.isEmpty() || m_bound == Bound::Uncounted ||
           (m_bound != Bound::Any && m_ridge > 0);
}

void TaskFilterProxyModel::clearFilters()
{
    m_words.clear();
    m_level = 0;
    m_category.clear();
    m_bound = Bound::Any;
    refilter();
}

void TaskFilterProxyModel::refilter()
{
    // Qt 6.4 has no begin/endFilterChange; invalidateFilter() re-runs filterAcceptsRow().
    invalidateFilter();
}

int TaskFilterProxyModel::acceptedTaskCount() const
{
    int count = 0;
    for (int row = 0; row < rowCount(); ++row)
        count += rowCount(index(row, 0));
    return count;
}

bool TaskFilterProxyModel::filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const
{
    const QModelIndex item = sourceModel()->index(sourceRow, 0, sourceParent);
    // A level row shows through its tasks only (recursive filtering), so an empty level hides.
    if (item.data(TaskListModel::IsLevelRole).toBool())
        return false;

    if (m_level != 0 && item.data(TaskListModel::LevelRole).toInt() != m_level)
        return false;
    if (!m_category.isEmpty() && !item.data(TaskListModel::CategoriesRole).toStringList().contains(m_category))
        return false;
    if (m_bound == Bound::Uncounted) {
        if (!item.data(TaskListModel::UncountedRole).toBool())
            return false;
    } else if (m_bound != Bound::Any && m_ridge > 0) {
        const QVariant intensity = item.data(TaskListModel::IntensityFusedRole);
        if (!intensity.isValid())
            return false; // not analysed yet: its side is unknown
        const bool memoryBound =
            boundAt(intensity.toDouble(), m_ridge) == kwb::Bound::Memory; // core/tasks/kernelbound.h
        if (memoryBound != (m_bound == Bound::Memory))
            return false;
    }
    if (!m_words.isEmpty()) {
        const QString id = item.data(TaskListModel::TaskIdRole).toString();
        const QString title = item.data(TaskListModel::TitleRole).toString();
        const QStringList ops = item.data(TaskListModel::OpNamesRole).toStringList();
        for (const QString& word : m_words) {
            const bool found = id.contains(word, Qt::CaseInsensitive) || title.contains(word, Qt::CaseInsensitive) ||
                               std::any_of(ops.cbegin(), ops.cend(), [&word](const QString& op) {
                                   return op.contains(word, Qt::CaseInsensitive);
                               });
            if (!found)
                return false;
        }
    }
    return true;
}

bool TaskFilterProxyModel::lessThan(const QModelIndex& left, const QModelIndex& right) const
{
    if (left.data(TaskListModel::IsLevelRole).toBool()) {
        // Levels stay in level order whichever way the tasks inside them are sorted.
        const int a = left.data(TaskListModel::LevelRole).toInt();
        const int b = right.data(TaskListModel::LevelRole).toInt();
        return sortOrder() == Qt::AscendingOrder ? a < b : a > b;
    }
    const QVariant a = left.data(sortRole());
    const QVariant b = right.data(sortRole());
    if (a.typeId() == QMetaType::QString || b.typeId() == QMetaType::QString)
        return QString::compare(a.toString(), b.toString(), sortCaseSensitivity()) < 0;
    return a.toDouble() < b.toDouble();
}

} // namespace kwb::app
