#include "app/tasks/taskdetailview.h"

#include "core/tasks/kernelbound.h"

#include "app/tasks/taskformat.h"
#include "app/tasks/tasklistmodel.h"
#include "core/tasks/taskcatalog.h"

#include <QFontDatabase>
#include <QFrame>
#include <QGridLayout>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QLocale>
#include <QPlainTextEdit>
#include <QScrollArea>
#include <QStackedWidget>
#include <QSyntaxHighlighter>
#include <QTabWidget>
#include <QTextDocument>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>

namespace kwb::app {

namespace {

// Numbers before shapes: the shapes are long, and the last column takes what width is left.
enum OpColumn {
    OpIndex,
    OpName,
    OpCategory,
    OpFlops,
    OpBytes,
    OpIntensity,
    OpShare,
    OpOutput,
    OpInputs,
    OpColumnCount
};
enum ShapeColumn { ShapeName, ShapeSymbolic, ShapeFull, ShapeSmoke, ShapeKind, ShapeColumnCount };

QString inputsText(const TaskOp& op)
{
    QStringList parts;
    for (const QList<qint64>& shape : op.inputs)
        parts << taskformat::shape(shape);
    return parts.join(QStringLiteral(", "));
}

QString percent(double fraction)
{
    const double p = 100.0 * fraction;
    return QString::number(p, 'f', p < 10 ? 1 : 0) + QStringLiteral(" %");
}

QString toleranceText(const TaskInfo& task)
{
    if (!task.atol && !task.rtol)
        return QObject::tr("tolerance of the protocol profile");
    QStringList parts;
    if (task.atol)
        parts << QObject::tr("atol %1").arg(*task.atol);
    if (task.rtol)
        parts << QObject::tr("rtol %1").arg(*task.rtol);
    return QObject::tr("tolerance %1").arg(parts.join(QStringLiteral(", ")));
}

} // namespace

TaskDetailView::TaskDetailView(TaskCatalog* catalog, QWidget* parent)
    : QWidget(parent)
    , m_catalog(catalog)
{
    m_stack = new QStackedWidget(this);
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);
    outer->addWidget(m_stack);

    m_empty = new QLabel(m_stack);
    m_empty->setAlignment(Qt::AlignCenter);
    m_empty->setWordWrap(true);
    m_empty->setObjectName(QStringLiteral("emptyState"));
    m_empty->setEnabled(false); // the palette's disabled text: a hint, not content
    m_stack->addWidget(m_empty);

    auto* content = new QWidget(m_stack);
    auto* layout = new QVBoxLayout(content);

    m_title = new QLabel(content);
    m_title->setObjectName(QStringLiteral("title"));
    QFont titleFont = m_title->font();
    titleFont.setPointSizeF(titleFont.pointSizeF() * 1.35);
    titleFont.setBold(true);
    m_title->setFont(titleFont);
    m_title->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_title->setWordWrap(true);
    m_subtitle = new QLabel(content);
    m_subtitle->setObjectName(QStringLiteral("subtitle"));
    m_subtitle->setWordWrap(true);
    m_subtitle->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_description = new QLabel(content);
    m_description->setObjectName(QStringLiteral("description"));
    m_description->setWordWrap(true);
    m_description->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_title);
    layout->addWidget(m_subtitle);
    layout->addWidget(m_description);

    auto* figures = new QGroupBox(tr("One forward at full scale"), content);
    auto* grid = new QGridLayout(figures);
    grid->setHorizontalSpacing(12);
    m_flops = addFigure(grid, 0, 0, tr("FLOPs"), QStringLiteral("flopsValue"));
    m_bytesUnfused = addFigure(grid, 1, 0, tr("Bytes, op by op"), QStringLiteral("bytesUnfusedValue"));
    m_bytesFused = addFigure(grid, 2, 0, tr("Bytes, fused"), QStringLiteral("bytesFusedValue"));
    m_intensityUnfused = addFigure(grid, 0, 2, tr("Intensity, op by op"), QStringLiteral("intensityUnfusedValue"));
    m_intensityFused = addFigure(grid, 1, 2, tr("Intensity, fused"), QStringLiteral("intensityFusedValue"));
    m_bound = addFigure(grid, 3, 0, tr("Bound"), QStringLiteral("boundValue"));
    m_boundName = qobject_cast<QLabel*>(grid->itemAtPosition(3, 0)->widget());
    m_floor = addFigure(grid, 4, 0, tr("Roofline floor"), QStringLiteral("floorValue"));
    m_floorName = qobject_cast<QLabel*>(grid->itemAtPosition(4, 0)->widget());
    m_eager = addFigure(grid, 5, 0, tr("Eager reference"), QStringLiteral("eagerValue"));
    m_eagerName = qobject_cast<QLabel*>(grid->itemAtPosition(5, 0)->widget());
    m_achieved = addFigure(grid, 6, 0, tr("Eager achieves"), QStringLiteral("achievedValue"));
    m_floorFlops = addFigure(grid, 7, 0, tr("Evaluator's floor counts"), QStringLiteral("floorFlopsValue"));
    // The long rows take the whole width.
    for (QLabel* wide : {m_bound, m_floor, m_eager, m_achieved, m_floorFlops}) {
        const int index = grid->indexOf(wide);
        int row = 0, column = 0, rowSpan = 0, columnSpan = 0;
        grid->getItemPosition(index, &row, &column, &rowSpan, &columnSpan);
        grid->removeWidget(wide);
        grid->addWidget(wide, row, column, 1, 3);
        wide->setWordWrap(true);
    }
    grid->setColumnStretch(1, 1);
    grid->setColumnStretch(3, 1);
    m_analysisNote = new QLabel(figures);
    m_analysisNote->setObjectName(QStringLiteral("analysisNote"));
    m_analysisNote->setWordWrap(true);
    grid->addWidget(m_analysisNote, 8, 0, 1, 4);
    layout->addWidget(figures);

    m_tabs = new QTabWidget(content);
    m_ops = new QTreeWidget(m_tabs);
    m_ops->setObjectName(QStringLiteral("opChain"));
    m_ops->setRootIsDecorated(false);
    m_ops->setUniformRowHeights(true);
    m_ops->setAlternatingRowColors(true);
    m_ops->setHeaderLabels({tr("#"), tr("Op"), tr("Category"), tr("FLOPs"), tr("Bytes"), tr("FLOP/B"), tr("Bytes %"),
                            tr("Output"), tr("Inputs")});
    m_ops->headerItem()->setToolTip(OpBytes, tr("HBM bytes of the op alone: its inputs read, its output written"));
    m_ops->headerItem()->setToolTip(OpShare, tr("Share of the op-by-op bytes"));
    for (int c : {int(OpFlops), int(OpBytes), int(OpIntensity), int(OpShare)})
        m_ops->headerItem()->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
    m_ops->header()->setStretchLastSection(true);
    m_ops->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_ops->header()->setSectionResizeMode(OpInputs, QHeaderView::Interactive);
    m_tabs->addTab(m_ops, tr("Op chain"));

    m_code = new QPlainTextEdit(m_tabs);
    m_code->setObjectName(QStringLiteral("referenceCode"));
    m_code->setReadOnly(true);
    m_code->setLineWrapMode(QPlainTextEdit::NoWrap);
    m_code->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_tabs->addTab(m_code, tr("Reference code"));

    m_shapes = new QTreeWidget(m_tabs);
    m_shapes->setObjectName(QStringLiteral("shapes"));
    m_shapes->setUniformRowHeights(true);
    m_shapes->setHeaderLabels({tr("Name"), tr("Shape"), tr("Full"), tr("Smoke"), tr("Type")});
    m_shapes->header()->setStretchLastSection(true);
    m_shapes->header()->setSectionResizeMode(QHeaderView::ResizeToContents);
    m_tabs->addTab(m_shapes, tr("Shapes"));
    layout->addWidget(m_tabs, 1);

    m_stack->addWidget(content);

    if (catalog) {
        connect(catalog, &TaskCatalog::taskUpdated, this, [this](const QString& id) {
            if (id == m_taskId)
                refresh();
        });
        connect(catalog, &TaskCatalog::tasksReset, this, &TaskDetailView::refresh);
        connect(catalog, &TaskCatalog::eagerTimesChanged, this, &TaskDetailView::refresh);
    }
    refresh();
}

TaskDetailView::~TaskDetailView() = default;

QLabel* TaskDetailView::addFigure(QGridLayout* grid, int row, int column, const QString& name,
                                  const QString& objectName)
{
    auto* nameLabel = new QLabel(name + QLatin1Char(':'), grid->parentWidget());
    auto* value = new QLabel(grid->parentWidget());
    value->setObjectName(objectName);
    value->setTextInteractionFlags(Qt::TextSelectableByMouse);
    grid->addWidget(nameLabel, row, column);
    grid->addWidget(value, row, column + 1);
    return value;
}

QTextDocument* TaskDetailView::codeDocument() const
{
    return m_code->document();
}

void TaskDetailView::setHighlighterFactory(const HighlighterFactory& factory)
{
    delete m_highlighter;
    m_highlighterFactory = factory;
    if (!factory)
        return;
    m_highlighter = factory(m_code->document());
    if (m_highlighter && !m_highlighter->parent())
        m_highlighter->setParent(m_code->document());
}

void TaskDetailView::setRoofs(double computeGflops, double bandwidthGBps, const QString& gpuName)
{
    m_computeGflops = computeGflops > 0 ? computeGflops : 0;
    m_bandwidthGBps = bandwidthGBps > 0 ? bandwidthGBps : 0;
    m_roofsGpu = gpuName;
    refresh();
}

void TaskDetailView::clearRoofs()
{
    setRoofs(0, 0, QString());
}

void TaskDetailView::showTask(const QString& id)
{
    m_taskId = id;
    refresh();
}

void TaskDetailView::showEmpty(const QString& text)
{
    m_empty->setText(text);
    m_stack->setCurrentWidget(m_empty);
}

void TaskDetailView::refresh()
{
    const TaskInfo* task = m_catalog ? m_catalog->task(m_taskId) : nullptr;
    if (!task) {
        if (!m_catalog || m_catalog->tasks().isEmpty())
            showEmpty(tr("No tasks yet: they appear on the left once the worker has listed them."));
        else
            showEmpty(tr("Select a task on the left to see its shapes, op chain and reference code."));
        return;
    }
    m_title->setText(task->id + QStringLiteral("  ") + task->title);
    QStringList facts{tr("Level %1: %2").arg(task->level).arg(TaskListModel::levelName(task->level).toLower())};
    if (!task->source.isEmpty())
        facts << tr("KernelBench %1").arg(task->source);
    facts << toleranceText(*task);
    m_subtitle->setText(facts.join(QStringLiteral(" · ")));
    m_subtitle->setToolTip(task->path);
    m_description->setText(task->description);
    m_description->setVisible(!task->description.isEmpty());

    fillFigures(*task);
    fillOps(*task);
    fillShapes(*task);
    if (m_code->toPlainText() != task->forward)
        m_code->setPlainText(task->forward);
    m_stack->setCurrentIndex(1);
}

void TaskDetailView::fillFigures(const TaskInfo& task)
{
    const QString dash = QStringLiteral("–");
    const QString gpu = !m_catalog->eagerGpuName().isEmpty() ? m_catalog->eagerGpuName()
                        : !m_roofsGpu.isEmpty()              ? m_roofsGpu
                                                             : tr("this GPU");
    m_eagerName->setText(tr("Eager on %1:").arg(gpu));
    const QString roofsGpu = m_roofsGpu.isEmpty() ? tr("this GPU") : m_roofsGpu;
    m_boundName->setText(tr("Bound on %1:").arg(roofsGpu));
    m_floorName->setText(tr("Roofline floor:"));

    const std::optional<EagerTime> eager = m_catalog->eagerTime(task.id);
    if (eager) {
        QString text = taskformat::milliseconds(eager->meanMs) + tr(" (mean)");
        QStringList origin;
        if (eager->runId > 0)
            origin << tr("run %1").arg(eager->runId);
        if (eager->measured.isValid())
            origin << QLocale().toString(eager->measured.toLocalTime(), QLocale::ShortFormat);
        if (!origin.isEmpty())
            text += QStringLiteral(", ") + origin.join(QStringLiteral(", "));
        m_eager->setText(text);
    } else {
        m_eager->setText(tr("not measured on this GPU yet"));
    }

    // Totals that leave uncounted ops out are no task's: shown as none, with the ops named.
    if (!task.hasAnalysis() || !task.analysis.complete()) {
        for (QLabel* l : {m_flops, m_bytesUnfused, m_bytesFused, m_intensityUnfused, m_intensityFused, m_bound, m_floor,
                          m_achieved, m_floorFlops}) {
            l->setText(dash);
            l->setToolTip(QString());
        }
        m_analysisNote->setText(
            task.hasAnalysis()
                ? tr("The worker %1, so this task has no FLOPs, bytes or bound.").arg(task.analysis.uncountedText())
            : task.isKernelBenchOnly()
                ? tr("KernelBench only (%1): the analyser counts a task's TorchScript forward, which this task does "
                     "not have, so it has no FLOPs, bytes, bound or point on the roofline. It is evaluated against "
                     "KernelBench's own Model, in KernelBench's answer format.")
                      .arg(task.kernelBenchOnly)
            : task.analysisState == TaskInfo::Analysis::Failed
                ? tr("The worker could not analyse this task: %1").arg(task.analysisError)
                : tr("Analysing: the worker is reading the shapes of this task…"));
        m_analysisNote->setVisible(true);
        return;
    }
    m_analysisNote->setVisible(false);

    const TaskAnalysis& a = task.analysis;
    m_flops->setText(taskformat::si(a.flops, QStringLiteral("FLOP")));
    m_flops->setToolTip(taskformat::exact(a.flops, QStringLiteral("FLOP")));
    m_bytesUnfused->setText(taskformat::si(a.bytesUnfused, QStringLiteral("B")));
    m_bytesUnfused->setToolTip(taskformat::exact(a.bytesUnfused, QStringLiteral("bytes")) +
                               tr("\nEvery op reads its inputs from HBM and writes its output back."));
    m_bytesFused->setText(taskformat::si(a.bytesFused, QStringLiteral("B")));
    m_bytesFused->setToolTip(taskformat::exact(a.bytesFused, QStringLiteral("bytes")) +
                             tr("\nInputs, parameters and output moved once: the least any kernel moves."));
    m_intensityUnfused->setText(taskformat::intensity(a.intensityUnfused) + QStringLiteral(" FLOP/B"));
    // What an evaluation's below_roofline_floor counts (a bound, where the floor above, with every
    // FLOP at the FP32 peak, is an estimate): the worker's one definition, roofline::boundFlops.
    m_floorFlops->setText(a.boundFlops ? tr("%1: the matmuls and each convolution's channel contraction, what every "
                                            "implementation computes")
                                             .arg(taskformat::si(*a.boundFlops, QStringLiteral("FLOP")))
                                       : tr("not in this worker's analysis"));
    m_floorFlops->setToolTip(tr("An evaluation is flagged below_roofline_floor (never counted correct) when it is "
                                "faster than these FLOPs at the compute ceiling or the fused bytes at the bandwidth "
                                "ceiling, less 10 %. Convolutions count 2 x outputs x input channels per group: "
                                "Winograd and FFT save the kernel's taps, not that."));
    m_intensityFused->setText(taskformat::intensity(a.intensityFused) + QStringLiteral(" FLOP/B"));

    const bool haveRoofs = m_computeGflops > 0 && m_bandwidthGBps > 0;
    if (haveRoofs) {
        // The one definition (core/tasks/kernelbound.h): the task's one-kernel intensity against
        // the FP32 ridge, as the filter, the roofline and the prompts say it.
        const double ridge = ridgeIntensity(m_computeGflops, m_bandwidthGBps);
        const bool memoryBound = taskBound(a, ridge) == Bound::Memory;
        m_bound->setText(memoryBound ? tr("memory: %1 FLOP/B fused is below the ridge point, %2 FLOP/B")
                                           .arg(taskformat::intensity(a.intensityFused), taskformat::intensity(ridge))
                                     : tr("compute: %1 FLOP/B fused is at or above the ridge point, %2 FLOP/B")
                                           .arg(taskformat::intensity(a.intensityFused), taskformat::intensity(ridge)));
        // The least time any kernel can take: all the work at the compute peak, or the fused
        // bytes at full bandwidth, whichever is longer.
        const double computeMs = a.flops / (m_computeGflops * 1e9) * 1e3;
        const double memoryMs = a.bytesFused / (m_bandwidthGBps * 1e9) * 1e3;
        m_floor->setText(tr("%1 (%2 at %3, %4 at %5)")
                             .arg(taskformat::milliseconds(std::max(computeMs, memoryMs)),
                                  tr("compute %1").arg(taskformat::milliseconds(computeMs)),
                                  taskformat::si(m_computeGflops * 1e9, QStringLiteral("FLOP/s")),
                                  tr("memory %1").arg(taskformat::milliseconds(memoryMs)),
                                  taskformat::si(m_bandwidthGBps * 1e9, QStringLiteral("B/s"))));
    } else {
        m_bound->setText(tr("unknown: no roofs for the current GPU"));
        m_floor->setText(dash);
    }
    m_bound->setToolTip(tr("A kernel that moves only the fused bytes is memory-bound when its intensity is below "
                           "compute peak / memory bandwidth."));

    if (eager && eager->meanMs > 0) {
        const double seconds = eager->meanMs / 1e3;
        const double flopRate = a.flops / seconds;
        const double byteRate = a.bytesFused / seconds;
        QString text = tr("%1, %2 effective")
                           .arg(taskformat::si(flopRate, QStringLiteral("FLOP/s")),
                                taskformat::si(byteRate, QStringLiteral("B/s")));
        if (haveRoofs)
            text += tr(" (%1 of the compute peak, %2 of the bandwidth)")
                        .arg(percent(flopRate / (m_computeGflops * 1e9)), percent(byteRate / (m_bandwidthGBps * 1e9)));
        m_achieved->setText(text);
        m_achieved->setToolTip(tr("FLOPs and fused bytes of one forward divided by the eager mean time. The eager "
                                  "reference moves more than the fused bytes, so its real traffic is higher."));
    } else {
        m_achieved->setText(dash);
        m_achieved->setToolTip(QString());
    }
}

void TaskDetailView::fillOps(const TaskInfo& task)
{
    m_ops->clear();
    const TaskAnalysis& a = task.analysis;
    m_tabs->setTabText(m_tabs->indexOf(m_ops),
                       task.hasAnalysis() ? tr("Op chain (%1)").arg(a.opCount) : tr("Op chain"));
    if (!task.hasAnalysis())
        return;
    const QStringList forwardLines = task.forward.split(QLatin1Char('\n'));
    QList<QTreeWidgetItem*> items;
    for (const TaskOp& op : a.ops) {
        auto* item = new QTreeWidgetItem;
        item->setText(OpIndex, QString::number(op.index));
        item->setText(OpName, op.shortName());
        item->setToolTip(OpName, op.op);
        item->setText(OpCategory, op.category);
        item->setText(OpInputs, inputsText(op));
        item->setText(OpOutput, taskformat::shape(op.output));
        item->setText(OpFlops, taskformat::si(op.flops, QStringLiteral("FLOP")));
        item->setToolTip(OpFlops, taskformat::exact(op.flops, QStringLiteral("FLOP")));
        item->setText(OpBytes, taskformat::si(op.bytes, QStringLiteral("B")));
        item->setToolTip(OpBytes, taskformat::exact(op.bytes, QStringLiteral("bytes")));
        item->setText(OpIntensity, op.bytes > 0 ? taskformat::intensity(op.flops / op.bytes) : QStringLiteral("–"));
        item->setText(OpShare, a.bytesUnfused > 0 ? percent(op.bytes / a.bytesUnfused) : QStringLiteral("–"));
        // The analyzer numbers the forward's lines from 1: the tooltip quotes the op's line.
        if (op.line > 0 && op.line <= forwardLines.size()) {
            const QString code = tr("line %1: %2").arg(op.line).arg(forwardLines.at(op.line - 1).trimmed());
            for (int c = 0; c < OpColumnCount; ++c)
                if (item->toolTip(c).isEmpty())
                    item->setToolTip(c, code);
        }
        for (int c : {int(OpFlops), int(OpBytes), int(OpIntensity), int(OpShare)})
            item->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
        items << item;
    }
    if (!a.ops.isEmpty()) {
        auto* total = new QTreeWidgetItem;
        total->setText(OpName, tr("Total"));
        total->setText(OpOutput, taskformat::shape(a.outputShape));
        total->setText(OpFlops, taskformat::si(a.flops, QStringLiteral("FLOP")));
        total->setText(OpBytes, taskformat::si(a.bytesUnfused, QStringLiteral("B")));
        total->setText(OpIntensity, taskformat::intensity(a.intensityUnfused));
        QFont bold = m_ops->font();
        bold.setBold(true);
        for (int c = 0; c < OpColumnCount; ++c) {
            total->setFont(c, bold);
            if (c >= OpFlops && c <= OpShare)
                total->setTextAlignment(c, Qt::AlignRight | Qt::AlignVCenter);
        }
        items << total;
    } else {
        auto* none = new QTreeWidgetItem;
        none->setText(OpName, tr("The analysis lists no ops (%1 in total)").arg(a.opCount));
        none->setFirstColumnSpanned(true);
        items << none;
    }
    m_ops->addTopLevelItems(items);
}

void TaskDetailView::fillShapes(const TaskInfo& task)
{
    m_shapes->clear();
    auto group = [this](const QString& name) {
        auto* item = new QTreeWidgetItem(m_shapes);
        item->setText(ShapeName, name);
        item->setFirstColumnSpanned(true);
        QFont bold = m_shapes->font();
        bold.setBold(true);
        item->setFont(ShapeName, bold);
        return item;
    };
    QTreeWidgetItem* dims = group(tr("Dimensions (%1)").arg(task.dims.size()));
    for (const TaskDim& d : task.dims) {
        auto* item = new QTreeWidgetItem(dims);
        item->setText(ShapeName, d.name);
        item->setText(ShapeFull, QString::number(d.full));
        item->setText(ShapeSmoke, QString::number(d.smoke));
    }
    auto addTensors = [](QTreeWidgetItem* parent, const QList<TaskTensor>& tensors, bool parameters) {
        for (const TaskTensor& t : tensors) {
            auto* item = new QTreeWidgetItem(parent);
            item->setText(ShapeName, t.name);
            if (t.kind != QLatin1String("tensor") && !t.kind.isEmpty()) {
                item->setText(ShapeFull, t.value.isDouble() ? QString::number(t.value.toDouble()) : QString());
                item->setText(ShapeKind, t.kind);
                continue;
            }
            item->setText(ShapeSymbolic, t.shape.join(QChar(0x00D7)));
            item->setText(ShapeFull, taskformat::shape(t.full));
            item->setText(ShapeSmoke, taskformat::shape(t.smoke));
            QStringList kind;
            if (!t.dtype.isEmpty())
                kind << t.dtype;
            if (!parameters && !t.generator.isEmpty())
                kind << t.generator;
            if (parameters && !t.init.isEmpty())
                kind << t.init;
            if (t.buffer)
                kind << QObject::tr("buffer");
            item->setText(ShapeKind, kind.join(QStringLiteral(", ")));
        }
    };
    addTensors(group(tr("Inputs (%1)").arg(task.inputs.size())), task.inputs, false);
    if (!task.params.isEmpty())
        addTensors(group(tr("Parameters (%1)").arg(task.params.size())), task.params, true);
    if (task.hasAnalysis() && !task.analysis.outputShape.isEmpty()) {
        auto* output = new QTreeWidgetItem(group(tr("Output")));
        output->setText(ShapeName, tr("forward()"));
        output->setText(ShapeFull, taskformat::shape(task.analysis.outputShape));
    }
    if (!task.shapeSets.isEmpty()) {
        // Where correctness is checked besides KernelBench's shape: each set's dimensions that differ.
        QTreeWidgetItem* sets = group(tr("Shape sets checked (%1)").arg(task.shapeSets.size()));
        for (const TaskShapeSet& set : task.shapeSets) {
            auto* item = new QTreeWidgetItem(sets);
            item->setText(ShapeName, set.name);
            const QString full = set.differencesFrom(task.dims, false), smoke = set.differencesFrom(task.dims, true);
            item->setText(ShapeFull, full.isEmpty() ? tr("as above") : full);
            item->setText(ShapeSmoke, smoke.isEmpty() ? tr("as above") : smoke);
            if (set.heldOut)
                item->setText(ShapeKind, tr("held out: never shown in a prompt"));
        }
    }
    m_shapes->expandAll();
}

} // namespace kwb::app
