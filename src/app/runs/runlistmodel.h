#pragma once
// The runs of a run store as a table: id, name, regime, created, status, tasks and correct %, one
// row per run in id order, each checkable (the results page compares the checked runs).
//
// reload() reads the store again and updates rows in place (dataChanged for changed rows,
// inserts for new runs, removals for deleted ones), so a view's selection and the check marks
// survive a refresh while a run is going on.

#include "core/store/runstore.h"

#include <QAbstractTableModel>
#include <QList>
#include <QSet>

namespace kwb::app {

/// A run with the counts the list shows.
struct RunListEntry
{
    RunInfo info;
    int tasks = 0;   ///< every task the run was asked to do (report.h's runOutcomes)
    int correct = 0; ///< tasks whose selected evaluation is correct (report.h's selectOutcome)
    int evaluations = 0;
};

/// Reads one run's list entry (counts by core's selection rule, the run's own for "last"-turn regimes).
RunListEntry runListEntry(const RunStore& store, const RunInfo& info);

class RunListModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column {
        IdColumn,
        NameColumn,
        RegimeColumn,
        CreatedColumn,
        StatusColumn,
        TasksColumn,
        CorrectColumn,
        ColumnCount
    };
    enum Role {
        RunIdRole = Qt::UserRole + 1, ///< qint64
        SortRole,                     ///< the raw value: numbers as numbers, the time as a QDateTime
    };

    explicit RunListModel(QObject* parent = nullptr);

    /// Reads the store's runs (an empty list when it is not open) and keeps check marks by run id.
    void reload(const RunStore& store);
    /// The entries reload() would show: reads every evaluation of the store, so the results page
    /// calls it in a background job with its own connection and hands the list to setEntries().
    static QList<RunListEntry> readEntries(const RunStore& store);
    /// Shows these entries (in id order), updating rows in place as reload() does.
    void setEntries(const QList<RunListEntry>& entries);
    void clear();

    int rowCount(const QModelIndex& parent = QModelIndex()) const override;
    int columnCount(const QModelIndex& parent = QModelIndex()) const override;
    QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
    bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
    Qt::ItemFlags flags(const QModelIndex& index) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

    qint64 runId(int row) const;
    int rowOfRun(qint64 runId) const;
    const RunListEntry* entry(int row) const;
    /// The checked runs in row (id) order.
    QList<qint64> checkedRunIds() const;
    void setChecked(qint64 runId, bool checked);
    void setAllChecked(bool checked);

Q_SIGNALS:
    void checkedRunsChanged();

private:
    bool isRow(const QModelIndex& index) const;
    QVariant displayValue(const RunListEntry& entry, int column) const;
    QVariant sortValue(const RunListEntry& entry, int column) const;

    QList<RunListEntry> m_entries;
    QSet<qint64> m_checked;
};

} // namespace kwb::app
