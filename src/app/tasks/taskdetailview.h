#pragma once
// One task in full: title, description, the work and traffic figures of its static analysis,
// where it sits against the current GPU's roofs, the eager reference time measured there, the op
// chain op by op, the shapes at both scales and the reference forward.

#include "core/tasks/taskcatalog.h"

#include <QPointer>
#include <QString>
#include <QWidget>

#include <functional>

class QGridLayout;
class QLabel;
class QPlainTextEdit;
class QStackedWidget;
class QSyntaxHighlighter;
class QTabWidget;
class QTextDocument;
class QTreeWidget;

namespace kwb::app {

/// Makes a highlighter for a document that holds TorchScript (Python syntax); the highlighter
/// belongs to the document. May return nullptr (no colours).
using HighlighterFactory = std::function<QSyntaxHighlighter*(QTextDocument*)>;

class TaskDetailView : public QWidget
{
    Q_OBJECT
public:
    explicit TaskDetailView(TaskCatalog* catalog, QWidget* parent = nullptr);
    ~TaskDetailView() override;

    /// Shows a task of the catalog; an empty or unknown id shows the empty state.
    void showTask(const QString& id);
    QString taskId() const { return m_taskId; }

    /// Colours the reference code from now on (default: plain text).
    void setHighlighterFactory(const HighlighterFactory& factory);
    /// The current GPU's compute peak (GFLOP/s, the one fp32 kernels meet: FP32 FMA) and memory
    /// bandwidth (GB/s), for the bound, the roofline floor and the share of the roofs reached.
    void setRoofs(double computeGflops, double bandwidthGBps, const QString& gpuName = QString());
    void clearRoofs();

    /// The reference code's document (tests, and for a highlighter made elsewhere).
    QTextDocument* codeDocument() const;

private:
    void refresh();
    void showEmpty(const QString& text);
    void fillFigures(const TaskInfo& task);
    void fillOps(const TaskInfo& task);
    void fillShapes(const TaskInfo& task);
    QLabel* addFigure(QGridLayout* grid, int row, int column, const QString& name, const QString& objectName);

    QPointer<TaskCatalog> m_catalog;
    QString m_taskId;
    HighlighterFactory m_highlighterFactory;
    QPointer<QSyntaxHighlighter> m_highlighter;
    double m_computeGflops = 0;
    double m_bandwidthGBps = 0;
    QString m_roofsGpu;

    QStackedWidget* m_stack = nullptr;
    QLabel* m_empty = nullptr;
    QLabel* m_title = nullptr;
    QLabel* m_subtitle = nullptr;
    QLabel* m_description = nullptr;
    QLabel* m_analysisNote = nullptr;
    QLabel* m_flops = nullptr;
    QLabel* m_bytesUnfused = nullptr;
    QLabel* m_bytesFused = nullptr;
    QLabel* m_intensityUnfused = nullptr;
    QLabel* m_intensityFused = nullptr;
    QLabel* m_bound = nullptr;
    QLabel* m_floor = nullptr;
    QLabel* m_floorFlops = nullptr;
    QLabel* m_eager = nullptr;
    QLabel* m_achieved = nullptr;
    QLabel* m_eagerName = nullptr;
    QLabel* m_boundName = nullptr;
    QLabel* m_floorName = nullptr;
    QTabWidget* m_tabs = nullptr;
    QTreeWidget* m_ops = nullptr;
    QTreeWidget* m_shapes = nullptr;
    QPlainTextEdit* m_code = nullptr;
};

} // namespace kwb::app
