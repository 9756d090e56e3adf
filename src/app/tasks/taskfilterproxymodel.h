#pragma once
// Search and filters over TaskListModel. A task shows when every word of the search text is in
// its id, its title or one of its op names, and it passes the level, op-category and bound
// filters; a level row shows while one of its tasks does (recursive filtering).

#include <QSortFilterProxyModel>
#include <QStringList>

namespace kwb::app {

class TaskFilterProxyModel : public QSortFilterProxyModel
{
    Q_OBJECT
public:
    enum class Bound {
        Any,
        Memory,    ///< fused intensity below the ridge point of the current GPU
        Compute,   ///< fused intensity at or above it
        Uncounted, ///< ops the worker cannot count: no intensity, so neither (needs no ridge)
    };
    Q_ENUM(Bound)

    explicit TaskFilterProxyModel(QObject* parent = nullptr);

    /// Words separated by spaces, all of which must match (case-insensitive).
    void setSearchText(const QString& text);
    QString searchText() const { return m_words.join(QLatin1Char(' ')); }
    /// 0: every level.
    void setLevel(int level);
    int level() const { return m_level; }
    /// An op category of the analysis ("conv", "matmul", …); empty: every category.
    void setCategory(const QString& category);
    QString category() const { return m_category; }
    /// Which side of the ridge point; Memory and Compute are ignored while ridgeIntensity() is 0
    /// (no roofs known).
    void setBound(Bound bound);
    Bound bound() const { return m_bound; }
    /// The current GPU's ridge point (compute peak / memory bandwidth), FLOP/B; 0: unknown.
    void setRidgeIntensity(double flopPerByte);
    double ridgeIntensity() const { return m_ridge; }

    /// True when search text or a filter narrows the list.
    bool isFiltering() const;
    void clearFilters();

    /// Tasks that pass the filters (level rows not counted).
    int acceptedTaskCount() const;

protected:
    bool filterAcceptsRow(int sourceRow, const QModelIndex& sourceParent) const override;
    bool lessThan(const QModelIndex& left, const QModelIndex& right) const override;

private:
    void refilter();

    QStringList m_words;
    int m_level = 0;
    QString m_category;
    Bound m_bound = Bound::Any;
    double m_ridge = 0;
};

} // namespace kwb::app
