#pragma once
// The tasks page: the catalog's tasks by level on the left, searchable (id, title, op names) and
// filtered by level, op category and, once the current GPU's roofs are known, by which side of the
// ridge point they fall; the selected task in full on the right (TaskDetailView). The page only
// reads the catalog: loading runs in the catalog, in the background, and the page shows its state.

#include "app/tasks/taskdetailview.h"
#include "core/tasks/taskcatalog.h"

#include <QPointer>
#include <QWidget>

class QComboBox;
class QLabel;
class QLineEdit;
class QModelIndex;
class QProgressBar;
class QPushButton;
class QSplitter;
class QStackedWidget;
class QTreeView;

namespace kwb::app {

class TaskFilterProxyModel;
class TaskListModel;

class TasksPage : public QWidget
{
    Q_OBJECT
public:
    /// The catalog is not owned; the page follows it (tasks, analyses, eager times, state).
    explicit TasksPage(TaskCatalog* catalog, QWidget* parent = nullptr);
    ~TasksPage() override;

    /// Colours the reference code (TorchScript, Python syntax); default: none.
    void setHighlighterFactory(const HighlighterFactory& factory);
    /// The current GPU's compute peak (GFLOP/s; FP32 for the study's fp32 kernels) and memory
    /// bandwidth (GB/s). Turns on the memory-/compute-bound filter and the detail's bound, floor
    /// and share of the roofs.
    void setRoofs(double computeGflops, double bandwidthGBps, const QString& gpuName = QString());
    void clearRoofs();

    /// Selects a task and shows it (the roofline chart's click). Clears the search and filters
    /// when they hide it. False when the catalog has no such task.
    bool showTask(const QString& id);
    QString currentTaskId() const;

    TaskListModel* model() const { return m_model; }
    TaskFilterProxyModel* proxyModel() const { return m_proxy; }
    TaskDetailView* detailView() const { return m_detail; }

Q_SIGNALS:
    /// A task was double-clicked (or Enter pressed on it): open it elsewhere (e.g. in a run).
    void taskActivated(const QString& id);
    /// The selection moved to another task (empty when none).
    void currentTaskChanged(const QString& id);

private:
    void updateState();
    void updateFilterChoices();
    void updateCount();
    void updateEmptyState();
    void onCurrentChanged(const QModelIndex& current);
    void onEmptyStateLink(const QString& link);
    void resetFilterWidgets();
    void layoutLevelRows();
    QString taskIdAt(const QModelIndex& proxyIndex) const;

    QPointer<TaskCatalog> m_catalog;
    TaskListModel* m_model = nullptr;
    TaskFilterProxyModel* m_proxy = nullptr;
    QString m_currentId;
    QString m_roofsGpu;

    QSplitter* m_splitter = nullptr;
    QWidget* m_banner = nullptr;
    QLabel* m_bannerText = nullptr;
    QProgressBar* m_progress = nullptr;
    QPushButton* m_retry = nullptr;
    QLabel* m_loadErrors = nullptr;
    QLineEdit* m_search = nullptr;
    QComboBox* m_levelFilter = nullptr;
    QComboBox* m_categoryFilter = nullptr;
    QComboBox* m_boundFilter = nullptr;
    QStackedWidget* m_listStack = nullptr;
    QTreeView* m_view = nullptr;
    QLabel* m_empty = nullptr;
    QLabel* m_count = nullptr;
    TaskDetailView* m_detail = nullptr;
};

} // namespace kwb::app
