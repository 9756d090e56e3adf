#include "app/tasks/taskspage.h"

#include "core/tasks/kernelbound.h"

#include "app/tasks/taskfilterproxymodel.h"
#include "app/tasks/tasklistmodel.h"
#include "core/tasks/taskcatalog.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QMap>
#include <QPair>
#include <QProgressBar>
#include <QPushButton>
#include <QShortcut>
#include <QSplitter>
#include <QStackedWidget>
#include <QStandardItemModel>
#include <QTreeView>
#include <QVBoxLayout>

#include <algorithm>

namespace kwb::app {

namespace {

// The analyzer's categories in the order a reader thinks of them; others follow by name.
const QStringList& categoryOrder()
{
    static const QStringList order{QStringLiteral("matmul"),    QStringLiteral("conv"), QStringLiteral("elementwise"),
                                   QStringLiteral("reduction"), QStringLiteral("norm"), QStringLiteral("pool"),
                                   QStringLiteral("data"),      QStringLiteral("view")};
    return order;
}

QString categoryLabel(const QString& category)
{
    static const QMap<QString, const char*> labels{
        {QStringLiteral("matmul"), QT_TRANSLATE_NOOP("kwb::app::TasksPage", "Matmul, linear")},
        {QStringLiteral("conv"), QT_TRANSLATE_NOOP("kwb::app::TasksPage", "Convolution")},
        {QStringLiteral("elementwise"), QT_TRANSLATE_NOOP("kwb::app::TasksPage", "Elementwise")},
        {QStringLiteral("reduction"), QT_TRANSLATE_NOOP("kwb::app::TasksPage", "Reduction, softmax")},
        {QStringLiteral("norm"), QT_TRANSLATE_NOOP("kwb::app::TasksPage", "Normalization")},
        {QStringLiteral("pool"), QT_TRANSLATE_NOOP("kwb::app::TasksPage", "Pooling")},
        {QStringLiteral("data"), QT_TRANSLATE_NOOP("kwb::app::TasksPage", "Concatenation, copies")},
        {QStringLiteral("view"), QT_TRANSLATE_NOOP("kwb::app::TasksPage", "View, reshape")},
    };
    const auto it = labels.constFind(category);
    if (it != labels.cend())
        return TasksPage::tr(*it);
    return category.isEmpty() ? category : category.at(0).toUpper() + category.mid(1);
}

} // namespace

TasksPage::TasksPage(TaskCatalog* catalog, QWidget* parent)
    : QWidget(parent)
    , m_catalog(catalog)
{
    m_model = new TaskListModel(catalog, this);
    m_proxy = new TaskFilterProxyModel(this);
    m_proxy->setSourceModel(m_model);

    // Left: state, search, filters, the list.
    auto* left = new QWidget(this);
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(0, 0, 0, 0);

    m_banner = new QWidget(left);
    m_banner->setObjectName(QStringLiteral("stateBanner"));
    auto* bannerLayout = new QHBoxLayout(m_banner);
    bannerLayout->setContentsMargins(0, 0, 0, 0);
    m_bannerText = new QLabel(m_banner);
    m_bannerText->setWordWrap(true);
    m_bannerText->setObjectName(QStringLiteral("stateText"));
    m_progress = new QProgressBar(m_banner);
    m_progress->setMaximumWidth(160);
    m_progress->setTextVisible(false);
    m_retry = new QPushButton(tr("Reload"), m_banner);
    m_retry->setToolTip(tr("Ask the worker for the tasks and their analyses again"));
    bannerLayout->addWidget(m_bannerText, 1);
    bannerLayout->addWidget(m_progress);
    bannerLayout->addWidget(m_retry);
    leftLayout->addWidget(m_banner);

    m_loadErrors = new QLabel(left);
    m_loadErrors->setObjectName(QStringLiteral("loadErrors"));
    m_loadErrors->setWordWrap(true);
    m_loadErrors->setTextFormat(Qt::RichText);
    m_loadErrors->setTextInteractionFlags(Qt::TextSelectableByMouse);
    leftLayout->addWidget(m_loadErrors);

    m_search = new QLineEdit(left);
    m_search->setObjectName(QStringLiteral("search"));
    m_search->setPlaceholderText(tr("Search id, title or op (conv, L2/, softmax)"));
    m_search->setClearButtonEnabled(true);
    leftLayout->addWidget(m_search);

    auto* filters = new QHBoxLayout;
    m_levelFilter = new QComboBox(left);
    m_levelFilter->setObjectName(QStringLiteral("levelFilter"));
    m_categoryFilter = new QComboBox(left);
    m_categoryFilter->setObjectName(QStringLiteral("categoryFilter"));
    m_categoryFilter->setToolTip(tr("Tasks with at least one op of this category"));
    m_boundFilter = new QComboBox(left);
    m_boundFilter->setObjectName(QStringLiteral("boundFilter"));
    for (QComboBox* box : {m_levelFilter, m_categoryFilter, m_boundFilter}) {
        box->setSizeAdjustPolicy(QComboBox::AdjustToContents);
        filters->addWidget(box);
    }
    filters->addStretch(1);
    leftLayout->addLayout(filters);

    m_listStack = new QStackedWidget(left);
    m_view = new QTreeView(m_listStack);
    m_view->setObjectName(QStringLiteral("taskList"));
    m_view->setModel(m_proxy);
    m_view->setUniformRowHeights(true);
    m_view->setAlternatingRowColors(true);
    m_view->setSelectionMode(QAbstractItemView::SingleSelection);
    m_view->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_view->setSortingEnabled(true);
    m_view->sortByColumn(TaskListModel::IdColumn, Qt::AscendingOrder);
    // Titles and op chains are long: the title gets a fixed start width (elided, the tooltip
    // has it whole) and the op chain what is left; the numbers fit their contents.
    QHeaderView* header = m_view->header();
    header->setStretchLastSection(false);
    header->setSectionResizeMode(QHeaderView::ResizeToContents);
    header->setSectionResizeMode(TaskListModel::TitleColumn, QHeaderView::Interactive);
    header->resizeSection(TaskListModel::TitleColumn, m_view->fontMetrics().horizontalAdvance(QLatin1Char('x')) * 26);
    header->setSectionResizeMode(TaskListModel::OpsColumn, QHeaderView::Stretch);
    m_listStack->addWidget(m_view);
    m_empty = new QLabel(m_listStack);
    m_empty->setObjectName(QStringLiteral("listEmptyState"));
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    m_empty->setTextFormat(Qt::RichText);
    m_empty->setMargin(16);
    m_listStack->addWidget(m_empty);
    leftLayout->addWidget(m_listStack, 1);

    m_count = new QLabel(left);
    m_count->setObjectName(QStringLiteral("taskCount"));
    leftLayout->addWidget(m_count);

    // Right: the selected task.
    m_detail = new TaskDetailView(catalog, this);

    m_splitter = new QSplitter(Qt::Horizontal, this);
    m_splitter->addWidget(left);
    m_splitter->addWidget(m_detail);
    m_splitter->setStretchFactor(0, 1);
    m_splitter->setStretchFactor(1, 1);
    m_splitter->setChildrenCollapsible(false);
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(m_splitter);

    auto* find = new QShortcut(QKeySequence::Find, this);
    find->setContext(Qt::WidgetWithChildrenShortcut);
    connect(find, &QShortcut::activated, this, [this] {
        m_search->setFocus(Qt::ShortcutFocusReason);
        m_search->selectAll();
    });

    // The proxy signals row changes only: an empty list that stays empty under another search
    // still needs its message redone.
    connect(m_search, &QLineEdit::textChanged, this, [this](const QString& text) {
        m_proxy->setSearchText(text);
        updateEmptyState();
    });
    connect(m_levelFilter, &QComboBox::currentIndexChanged, this, [this] {
        m_proxy->setLevel(m_levelFilter->currentData().toInt());
        updateEmptyState();
    });
    connect(m_categoryFilter, &QComboBox::currentIndexChanged, this, [this] {
        m_proxy->setCategory(m_categoryFilter->currentData().toString());
        updateEmptyState();
    });
    connect(m_boundFilter, &QComboBox::currentIndexChanged, this, [this] {
        m_proxy->setBound(static_cast<TaskFilterProxyModel::Bound>(m_boundFilter->currentData().toInt()));
        updateEmptyState();
    });
    connect(m_retry, &QPushButton::clicked, this, [this] {
        if (m_catalog)
            m_catalog->load();
    });
    connect(m_empty, &QLabel::linkActivated, this, &TasksPage::onEmptyStateLink);

    // What the proxy shows changes with filters, sorting and the catalog: keep the level rows
    // spanning and open, the count and the empty state current.
    auto proxyChanged = [this] {
        layoutLevelRows();
        updateCount();
        updateEmptyState();
    };
    connect(m_proxy, &QAbstractItemModel::modelReset, this, proxyChanged);
    connect(m_proxy, &QAbstractItemModel::layoutChanged, this, proxyChanged);
    connect(m_proxy, &QAbstractItemModel::rowsInserted, this, proxyChanged);
    connect(m_proxy, &QAbstractItemModel::rowsRemoved, this, proxyChanged);

    connect(m_view->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
            [this](const QModelIndex& current) { onCurrentChanged(current); });
    connect(m_view, &QAbstractItemView::activated, this, [this](const QModelIndex& index) {
        const QString id = taskIdAt(index);
        if (!id.isEmpty())
            Q_EMIT taskActivated(id);
    });

    if (catalog) {
        connect(catalog, &TaskCatalog::stateChanged, this, &TasksPage::updateState);
        connect(catalog, &TaskCatalog::progressChanged, this, &TasksPage::updateState);
        connect(catalog, &TaskCatalog::tasksReset, this, [this] {
            updateFilterChoices();
            // The model was reset: select the task shown before, if it is still there.
            if (!m_currentId.isEmpty() && !showTask(m_currentId))
                onCurrentChanged(QModelIndex());
        });
        connect(catalog, &TaskCatalog::taskUpdated, this, &TasksPage::updateFilterChoices);
    }
    clearRoofs();
    updateFilterChoices();
    updateState();
    proxyChanged();
}

TasksPage::~TasksPage() = default;

void TasksPage::setHighlighterFactory(const HighlighterFactory& factory)
{
    m_detail->setHighlighterFactory(factory);
}

void TasksPage::setRoofs(double computeGflops, double bandwidthGBps, const QString& gpuName)
{
    const bool valid = computeGflops > 0 && bandwidthGBps > 0;
    m_roofsGpu = valid ? gpuName : QString();
    m_proxy->setRidgeIntensity(valid ? kwb::ridgeIntensity(computeGflops, bandwidthGBps) : 0);
    m_detail->setRoofs(valid ? computeGflops : 0, valid ? bandwidthGBps : 0, m_roofsGpu);
    updateFilterChoices(); // the counts per bound are this GPU's
    if (valid)
        m_boundFilter->setToolTip(tr("Which side of the ridge point of %1 (%2 FLOP/B) a task's fused intensity falls")
                                      .arg(gpuName.isEmpty() ? tr("the current GPU") : gpuName)
                                      .arg(computeGflops / bandwidthGBps, 0, 'f', 1));
    else
        m_boundFilter->setToolTip(tr("Memory- and compute-bound need the current GPU's roofs (a worker with a "
                                     "GPU); the tasks whose ops are not counted need none"));
    updateCount();
    updateEmptyState();
}

void TasksPage::clearRoofs()
{
    setRoofs(0, 0);
}

QString TasksPage::taskIdAt(const QModelIndex& proxyIndex) const
{
    return proxyIndex.siblingAtColumn(0).data(TaskListModel::TaskIdRole).toString();
}

QString TasksPage::currentTaskId() const
{
    return m_currentId;
}

bool TasksPage::showTask(const QString& id)
{
    const QModelIndex source = m_model->indexOfTask(id);
    if (!source.isValid())
        return false;
    QModelIndex proxy = m_proxy->mapFromSource(source);
    if (!proxy.isValid()) {
        resetFilterWidgets();
        proxy = m_proxy->mapFromSource(source);
        if (!proxy.isValid())
            return false;
    }
    m_view->selectionModel()->setCurrentIndex(proxy, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_view->scrollTo(proxy);
    // setCurrentIndex() does not signal when the task already was current (after a reset).
    onCurrentChanged(proxy);
    return true;
}

void TasksPage::onCurrentChanged(const QModelIndex& current)
{
    const QString id = taskIdAt(current);
    // Moving onto a level row keeps the task shown, as a heading is not a task.
    if (current.isValid() && id.isEmpty())
        return;
    m_detail->showTask(id);
    if (id != m_currentId) {
        m_currentId = id;
        Q_EMIT currentTaskChanged(id);
    }
}

void TasksPage::resetFilterWidgets()
{
    const QSignalBlocker blockSearch(m_search);
    const QSignalBlocker blockLevel(m_levelFilter);
    const QSignalBlocker blockCategory(m_categoryFilter);
    const QSignalBlocker blockBound(m_boundFilter);
    m_search->clear();
    m_levelFilter->setCurrentIndex(0);
    m_categoryFilter->setCurrentIndex(0);
    m_boundFilter->setCurrentIndex(0);
    m_proxy->clearFilters();
    updateCount();
    updateEmptyState();
}

void TasksPage::onEmptyStateLink(const QString& link)
{
    if (link == QLatin1String("clear"))
        resetFilterWidgets();
    else if (link == QLatin1String("load") && m_catalog)
        m_catalog->load();
}

void TasksPage::layoutLevelRows()
{
    for (int row = 0; row < m_proxy->rowCount(); ++row)
        m_view->setFirstColumnSpanned(row, QModelIndex(), true);
    m_view->expandAll();
}

namespace {

// Replaces a combo box's items, keeping the chosen value (or "all", index 0, when it is gone).
// Items that did not change are left alone, so an open popup is not disturbed while analyses
// arrive.
void setChoices(QComboBox* box, const QList<QPair<QString, QVariant>>& items)
{
    bool same = box->count() == items.size();
    for (int i = 0; same && i < items.size(); ++i)
        same = box->itemText(i) == items.at(i).first && box->itemData(i) == items.at(i).second;
    if (same)
        return;
    const QSignalBlocker block(box);
    const QVariant current = box->currentData();
    box->clear();
    for (const auto& item : items)
        box->addItem(item.first, item.second);
    const int index = box->findData(current);
    box->setCurrentIndex(index < 0 ? 0 : index);
}

} // namespace

void TasksPage::updateFilterChoices()
{
    QMap<int, int> levels;
    QMap<QString, int> categories;
    if (m_catalog) {
        for (const TaskInfo& t : m_catalog->tasks()) {
            ++levels[t.level];
            for (const QString& c : t.categories())
                ++categories[c];
        }
    }

    QList<QPair<QString, QVariant>> levelItems{{tr("All levels"), 0}};
    for (auto it = levels.cbegin(); it != levels.cend(); ++it)
        levelItems.append({tr("Level %1 (%2)").arg(it.key()).arg(it.value()), it.key()});
    setChoices(m_levelFilter, levelItems);

    QStringList names = categories.keys();
    std::stable_sort(names.begin(), names.end(), [](const QString& a, const QString& b) {
        const qsizetype ia = categoryOrder().indexOf(a), ib = categoryOrder().indexOf(b);
        if (ia != ib)
            return (ia < 0 ? categoryOrder().size() : ia) < (ib < 0 ? categoryOrder().size() : ib);
        return a < b;
    });
    QList<QPair<QString, QVariant>> categoryItems{{tr("All op categories"), QString()}};
    for (const QString& c : names)
        categoryItems.append({tr("%1 (%2)").arg(categoryLabel(c)).arg(categories.value(c)), c});
    setChoices(m_categoryFilter, categoryItems);

    // Each side of the ridge with its count (core taskBound(), the one-kernel intensity), and the
    // tasks whose ops cannot be counted, which have no side: at 250 tasks the counts say what a
    // filter leaves before it is chosen.
    const double ridge = m_proxy->ridgeIntensity();
    int memory = 0, compute = 0, uncounted = 0;
    if (m_catalog) {
        for (const TaskInfo& t : m_catalog->tasks()) {
            uncounted += t.isKernelBenchOnly() ? 1 : 0; // nothing to count: no TorchScript forward
            if (!t.hasAnalysis())
                continue;
            if (!t.analysis.complete()) {
                ++uncounted;
                continue;
            }
            const kwb::Bound b = ridge > 0 ? kwb::taskBound(t.analysis, ridge) : kwb::Bound::Unknown;
            memory += b == kwb::Bound::Memory ? 1 : 0;
            compute += b == kwb::Bound::Compute ? 1 : 0;
        }
    }
    using FilterBound = TaskFilterProxyModel::Bound;
    QList<QPair<QString, QVariant>> boundItems{
        {tr("Memory- or compute-bound"), int(FilterBound::Any)},
        {ridge > 0 ? tr("Memory-bound (%1)").arg(memory) : tr("Memory-bound"), int(FilterBound::Memory)},
        {ridge > 0 ? tr("Compute-bound (%1)").arg(compute) : tr("Compute-bound"), int(FilterBound::Compute)}};
    if (uncounted > 0)
        boundItems.append({tr("Ops not counted (%1)").arg(uncounted), int(FilterBound::Uncounted)});
    setChoices(m_boundFilter, boundItems);
    // Without roofs there are no sides, but the tasks that cannot be counted can still be found
    // (a machine without a GPU, where all 37 KernelBench-only tasks are among them).
    if (auto* model = qobject_cast<QStandardItemModel*>(m_boundFilter->model()))
        for (const int row : {1, 2})
            model->item(row)->setEnabled(ridge > 0);
    m_boundFilter->setEnabled(ridge > 0 || uncounted > 0);
    if (ridge <= 0 && m_boundFilter->currentIndex() > 0 && m_boundFilter->currentIndex() < 3)
        m_boundFilter->setCurrentIndex(0); // a side chosen on roofs that have gone

    // A filter value that no longer exists falls back to "all".
    m_proxy->setLevel(m_levelFilter->currentData().toInt());
    m_proxy->setCategory(m_categoryFilter->currentData().toString());
    m_proxy->setBound(static_cast<FilterBound>(m_boundFilter->currentData().toInt()));
}

void TasksPage::updateState()
{
    const TaskCatalog::State state = m_catalog ? m_catalog->state() : TaskCatalog::State::Failed;
    const int total = m_catalog ? m_catalog->taskCount() : 0;
    const int done = m_catalog ? m_catalog->analyzedCount() : 0;
    int failed = 0;
    if (m_catalog)
        for (const TaskInfo& t : m_catalog->tasks())
            failed += t.analysisState == TaskInfo::Analysis::Failed ? 1 : 0;

    QString text;
    bool busy = false;
    bool retry = false;
    switch (state) {
    case TaskCatalog::State::Idle: break;
    case TaskCatalog::State::LoadingTasks:
        text = tr("Asking the worker for its tasks…");
        busy = true;
        break;
    case TaskCatalog::State::Analyzing:
        text = tr("Analysing shapes: %1 of %2 tasks").arg(done).arg(total);
        busy = true;
        break;
    case TaskCatalog::State::Ready:
        if (failed > 0) {
            text = tr("%1 of %2 tasks could not be analysed (the Ops column says why)").arg(failed).arg(total);
            retry = true;
        } else if (!m_catalog->errorMessage().isEmpty()) {
            text = tr("Analysis incomplete: %1").arg(m_catalog->errorMessage());
            retry = true;
        }
        break;
    case TaskCatalog::State::Failed:
        // With no task at all, the list's empty state says it (with a link to try again).
        if (total > 0) {
            text = m_catalog->errorMessage();
            retry = true;
        }
        break;
    }
    m_bannerText->setText(text);
    m_progress->setVisible(busy);
    if (busy) {
        if (state == TaskCatalog::State::Analyzing && total > 0) {
            m_progress->setRange(0, total);
            m_progress->setValue(done);
        } else {
            m_progress->setRange(0, 0); // busy indicator: the count is not known yet
        }
    }
    m_retry->setVisible(retry);
    m_banner->setVisible(!text.isEmpty());

    const QList<TaskLoadError> errors = m_catalog ? m_catalog->loadErrors() : QList<TaskLoadError>();
    if (errors.isEmpty()) {
        m_loadErrors->hide();
    } else {
        constexpr int kShown = 4;
        QStringList lines;
        for (int i = 0; i < errors.size() && i < kShown; ++i)
            lines << errors.at(i).toString().toHtmlEscaped();
        if (errors.size() > kShown)
            lines << tr("… and %1 more").arg(errors.size() - kShown);
        QStringList all;
        for (const TaskLoadError& e : errors)
            all << e.toString();
        const QString heading = errors.size() == 1 ? tr("1 task file could not be loaded:")
                                                   : tr("%1 task files could not be loaded:").arg(errors.size());
        m_loadErrors->setText(QStringLiteral("<b>") + heading.toHtmlEscaped() + QStringLiteral("</b><br>") +
                              lines.join(QStringLiteral("<br>")));
        m_loadErrors->setToolTip(all.join(QLatin1Char('\n')));
        m_loadErrors->show();
    }
    updateEmptyState();
}

void TasksPage::updateCount()
{
    const int total = m_catalog ? m_catalog->taskCount() : 0;
    const int shown = m_proxy->acceptedTaskCount();
    if (total == 0)
        m_count->clear();
    else if (shown == total)
        m_count->setText(total == 1 ? tr("1 task") : tr("%1 tasks").arg(total));
    else
        m_count->setText(tr("%1 of %2 tasks match").arg(shown).arg(total));
}

void TasksPage::updateEmptyState()
{
    const int total = m_catalog ? m_catalog->taskCount() : 0;
    QString text;
    if (total == 0) {
        const TaskCatalog::State state = m_catalog ? m_catalog->state() : TaskCatalog::State::Failed;
        switch (state) {
        case TaskCatalog::State::Idle:
            text = tr("No tasks loaded yet. <a href=\"load\">Ask the worker for them</a>");
            break;
        case TaskCatalog::State::LoadingTasks:
            text = tr("Asking the worker for its tasks… (the first start loads libtorch and takes a few seconds)");
            break;
        case TaskCatalog::State::Analyzing:
        case TaskCatalog::State::Ready:
            text = tr("The worker lists no tasks: check its tasks directory. <a href=\"load\">Ask again</a>");
            break;
        case TaskCatalog::State::Failed:
            text = tr("<b>No tasks.</b><br>%1<br><br><a href=\"load\">Try again</a>")
                       .arg((m_catalog ? m_catalog->errorMessage() : tr("no task catalog")).toHtmlEscaped());
            break;
        }
    } else if (m_proxy->rowCount() == 0) {
        const QString search = m_proxy->searchText();
        text = (search.isEmpty() ? tr("No task passes these filters.")
                                 : tr("No task matches “%1” with these filters.").arg(search.toHtmlEscaped())) +
               QStringLiteral(" <a href=\"clear\">") + tr("Clear the search and filters") + QStringLiteral("</a>");
    }
    m_empty->setText(text);
    m_listStack->setCurrentWidget(text.isEmpty() ? static_cast<QWidget*>(m_view) : m_empty);
}

} // namespace kwb::app
