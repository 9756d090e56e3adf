#pragma once
// The prompt editor: template sets and their templates on the left (the shipped set read-only),
// the template in the centre (Mustache colours, line numbers, the line of a template error
// marked), and on the right a live preview rendered by core's PromptRenderer for a task and a
// role template, re-rendered 250 ms after the last keystroke.
//
// The preview renders the editor's text, saved or not: the set is mirrored into a private
// temporary folder with the buffer written over its file, so partials resolve as in a run. The
// context is the one a run builds (PromptRenderer::buildContext plus what the regime fills in);
// the earlier roles' notes and, on a later turn, the feedback are placeholders that show where
// they go.
//
// Nothing here is modal: switching away from unsaved changes, naming a new set and errors are
// bars inside the page.

#include "core/prompts/templateset.h"
#include "core/protocol/devicefacts.h"
#include "core/protocol/workerresponses.h"
#include "core/store/runstore.h"
#include "core/study/provenance.h"

#include <QHash>
#include <QJsonObject>
#include <QString>
#include <QWidget>

#include <memory>

class QAction;
class QComboBox;
class QDialog;
class QFrame;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSyntaxHighlighter;
class QTemporaryDir;
class QTimer;
class QTreeWidget;
class QTreeWidgetItem;

namespace kwb::app {

class CodeEditor;
class SideBySideDiffView;

class PromptEditorPage : public QWidget
{
    Q_OBJECT
public:
    /// shippedDir: the prompts directory the study ships (shown read-only). userSetsRoot: where
    /// user sets live and new ones are made (TemplateSet::userSetsRoot() in the application).
    explicit PromptEditorPage(const QString& shippedDir, const QString& userSetsRoot = TemplateSet::userSetsRoot(),
                              QWidget* parent = nullptr);
    ~PromptEditorPage() override;

    // ---- what the preview renders with ----------------------------------------------------------
    /// A task as the worker's `tasks` lists it (decoded; the preview renders its json), with its
    /// `analyze` and `profile` responses as received (either may be empty: the preview then says
    /// which variables are false): the renderer's context is the worker's JSON, as a run's prompts'
    /// is (RunTaskInput). Keyed by the task's id; a second call for the same id replaces it.
    void setTaskData(const TaskSpec& task, const QJsonObject& analyze = {}, const QJsonObject& profile = {});
    /// The worker's `device` facts (not available: no GPU known).
    void setDevice(const DeviceFacts& device);
    void clearTaskData();

    enum class PreviewTurn {
        First, ///< turn 1: no feedback
        Later, ///< turn 2: placeholder feedback (a compile error) and the rewrite role's notes
    };
    void setPreviewTask(const QString& taskId);
    /// A role template of the current set ("agent/generator.mustache"); a partial's preview
    /// renders one of these.
    void setPreviewTemplate(const QString& templatePath);
    void setPreviewTurn(PreviewTurn turn);
    QString previewTask() const;
    QString previewTemplate() const;
    /// Renders now instead of after the debounce delay.
    void renderPreviewNow();

    // ---- the template being edited -----------------------------------------------------------------
    /// Opens a template of the set in setDir. With unsaved changes elsewhere it does not switch but
    /// shows the unsaved-changes bar and returns false (so does a path the set lacks).
    bool openTemplate(const QString& setDir, const QString& templatePath);
    TemplateSet currentSet() const { return m_set; }
    QString currentTemplate() const { return m_template; }
    bool isModified() const;

    /// Ctrl+S: writes the template; for the read-only shipped set, opens the "new set" bar instead
    /// (and returns false).
    bool save();
    /// Back to the file's text.
    void revert();
    /// Copies the current set to a new user set with the editor's text in it and opens it there.
    bool saveAsNewSet(const QString& name, QString* error = nullptr);
    /// Opens the side-by-side diff of the shipped template against the editor's text.
    void showDiffAgainstShipped();
    /// Re-reads the user sets (another program may have added one).
    void refreshSets();
    /// The runs of the open database, to compare the set shown with what a run actually used
    /// (its stored templates; core/study/provenance.h's compareTemplates). Empty: none.
    void setRuns(const QList<RunInfo>& runs);
    /// Compares the current set with run `runId` of setRuns (0: none); false for a run not given.
    bool compareWithRun(qint64 runId);
    /// The comparison's summary line ("#4 agent used 12 templates: 9 as in this set, …"), empty
    /// with no run chosen.
    QString runComparisonText() const;

    // ---- what it shows, for tests, the window's status bar and screenshots ---------------------------
    CodeEditor* editor() const { return m_editor; }
    QString previewText() const;
    /// The error bar's text ("agent/generator.mustache:12: section 'x' is never closed"), empty when
    /// the preview rendered.
    QString errorText() const;
    /// The line marked in the editor (1-based), 0 when none.
    int errorLine() const;
    /// The notes above the preview: which data is missing, what is a placeholder.
    QString previewNotes() const;
    /// The unsaved-changes bar's text when it is shown, else empty.
    QString pendingSwitchMessage() const;
    QTreeWidget* setTree() const { return m_tree; }
    QDialog* diffDialog() const { return m_diffDialog; }
    SideBySideDiffView* diffView() const { return m_diffView; }

    static constexpr int kPreviewDelayMs = 250;

protected:
    void changeEvent(QEvent* event) override;

public Q_SLOTS:
    /// The unsaved-changes bar's buttons.
    void saveAndSwitch();
    void discardAndSwitch();
    void keepEditing();

Q_SIGNALS:
    void templateSaved(const QString& setDir, const QString& templatePath);
    void setCreated(const QString& setDir);
    void modificationChanged(bool modified);
    /// After each render: ok, or the error's text.
    void previewRendered(bool ok, const QString& error);

private:
    struct TaskData
    {
        QString title;
        QJsonObject task;
        QJsonObject analyze;
        QJsonObject profile;
    };

    QWidget* buildTreePane();
    QWidget* buildEditorPane();
    QWidget* buildPreviewPane();
    void populateTree();
    QTreeWidgetItem* itemFor(const QString& setDir, const QString& templatePath) const;
    void onTreeSelection(QTreeWidgetItem* current);
    void loadTemplate(const TemplateSet& set, const QString& templatePath);
    void updateTitle();
    void updateActions();
    void fillPreviewTemplates();
    void chooseTemplateForPartial();
    void showNameBar();
    void showMessage(const QString& text, bool error);
    QJsonObject previewContext(const QString& templatePath, QStringList* notes) const;
    bool mirrorSet(QString* error);
    void showRenderError(const QString& error, const QString& file, int line);
    void clearRenderError();
    TemplateSet findSet(const QString& dir) const;
    void updateRunComparison();

    TemplateSet m_shipped;
    QString m_userRoot;
    QList<TemplateSet> m_userSets;
    TemplateSet m_set;
    QString m_template;
    QString m_pendingSetDir;
    QString m_pendingTemplate;
    QHash<QString, TaskData> m_tasks;
    QStringList m_taskOrder;
    DeviceFacts m_device;
    std::unique_ptr<QTemporaryDir> m_mirror;
    bool m_loading = false;

    QTreeWidget* m_tree = nullptr;
    QComboBox* m_runCombo = nullptr; ///< "Compare with run"
    QLabel* m_runComparison = nullptr;
    QList<RunInfo> m_runs;
    QHash<QString, TemplateMatch> m_runMatch; ///< template path of the current set -> against the run chosen
    CodeEditor* m_editor = nullptr;
    QLabel* m_title = nullptr;
    QFrame* m_readOnlyBar = nullptr;
    QFrame* m_pendingBar = nullptr;
    QLabel* m_pendingLabel = nullptr;
    QPushButton* m_pendingSave = nullptr;
    QFrame* m_nameBar = nullptr;
    QLineEdit* m_nameEdit = nullptr;
    QLabel* m_nameError = nullptr;
    QFrame* m_errorBar = nullptr;
    QLabel* m_errorLabel = nullptr;
    QPushButton* m_errorGo = nullptr;
    QString m_errorFile;
    int m_errorLine = 0;
    QLabel* m_message = nullptr;
    QAction* m_saveAction = nullptr;
    QAction* m_revertAction = nullptr;
    QAction* m_saveAsAction = nullptr;
    QAction* m_diffAction = nullptr;

    QComboBox* m_taskCombo = nullptr;
    QComboBox* m_templateCombo = nullptr;
    QComboBox* m_turnCombo = nullptr;
    QLabel* m_notes = nullptr;
    QPlainTextEdit* m_preview = nullptr;
    QSyntaxHighlighter* m_previewHighlighter = nullptr;
    QLabel* m_previewStats = nullptr;
    QTimer* m_previewTimer = nullptr;

    QDialog* m_diffDialog = nullptr; // a child of the page, made on first use
    SideBySideDiffView* m_diffView = nullptr;
    QLabel* m_diffCaption = nullptr;
    QLabel* m_diffCount = nullptr;
};

} // namespace kwb::app
