#include "app/editor/prompteditorpage.h"

#include "app/editor/codeeditor.h"
#include "app/editor/sidebysidediffview.h"
#include "app/editor/syntaxhighlighting.h"
#include "core/config/regime.h"
#include "core/prompts/promptrenderer.h"
#include "core/protocol/devicefacts.h"
#include "core/protocol/workerresponses.h"
#include "core/run/regimefile.h"
#include "core/run/runcontroller.h"
#include "core/run/runname.h"

#include <QAction>
#include <QBrush>
#include <QComboBox>
#include <QDialog>
#include <QDir>
#include <QDirIterator>
#include <QEvent>
#include <QFile>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollBar>
#include <QSet>
#include <QSplitter>
#include <QTemporaryDir>
#include <QTextBlock>
#include <QTimer>
#include <QToolBar>
#include <QTreeWidget>
#include <QVBoxLayout>

#include <algorithm>

namespace kwb::app {

namespace {

constexpr int kSetDirRole = Qt::UserRole;
constexpr int kPathRole = Qt::UserRole + 1;

/// The editor's text as it goes to disk: toPlainText() would turn non-breaking spaces into spaces.
QString editorText(const CodeEditor* editor)
{
    QString text = editor->document()->toRawText();
    text.replace(QChar::ParagraphSeparator, QLatin1Char('\n'));
    text.replace(QChar::LineSeparator, QLatin1Char('\n'));
    return text;
}

QFrame* makeBar(QWidget* parent, const QString& objectName, const QString& light, const QString& border)
{
    auto* bar = new QFrame(parent);
    bar->setObjectName(objectName);
    bar->setFrameShape(QFrame::StyledPanel);
    // A tinted bar that stays readable in a dark palette: only the border and a faint fill are coloured.
    bar->setStyleSheet(QStringLiteral("QFrame#%1 { background: %2; border: 1px solid %3; border-radius: 3px; }")
                           .arg(objectName, light, border));
    bar->hide();
    return bar;
}

QString placeholder(const QString& name, const QString& what)
{
    return QStringLiteral("[%1: %2]").arg(name, what);
}

/// The partials a template includes, directly ({{> name}}).
QSet<QString> includedPartials(const QString& text)
{
    static const QRegularExpression re(QStringLiteral("\\{\\{\\s*>\\s*([^}\\s]+)\\s*\\}\\}"));
    QSet<QString> out;
    auto it = re.globalMatch(text);
    while (it.hasNext())
        out.insert(it.next().captured(1));
    return out;
}

} // namespace

PromptEditorPage::PromptEditorPage(const QString& shippedDir, const QString& userSetsRoot, QWidget* parent)
    : QWidget(parent)
    , m_shipped(TemplateSet::shipped(shippedDir))
    , m_userRoot(userSetsRoot)
{
    m_previewTimer = new QTimer(this);
    m_previewTimer->setSingleShot(true);
    m_previewTimer->setInterval(kPreviewDelayMs);
    connect(m_previewTimer, &QTimer::timeout, this, &PromptEditorPage::renderPreviewNow);

    auto* splitter = new QSplitter(Qt::Horizontal, this);
    splitter->addWidget(buildTreePane());
    splitter->addWidget(buildEditorPane());
    splitter->addWidget(buildPreviewPane());
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 3);
    splitter->setStretchFactor(2, 3);
    splitter->setSizes({230, 600, 560});
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(splitter);

    refreshSets();
    const QStringList shippedTemplates = m_shipped.roleTemplates();
    if (!shippedTemplates.isEmpty()) {
        loadTemplate(m_shipped, shippedTemplates.first());
    } else {
        m_editor->setPlaceholderText(
            tr("No prompt templates found in %1: the shipped set is missing.").arg(m_shipped.dir()));
        m_editor->setReadOnly(true);
        updateTitle();
        updateActions();
    }
}

PromptEditorPage::~PromptEditorPage() = default;

// ---- panes ---------------------------------------------------------------------------------------

QWidget* PromptEditorPage::buildTreePane()
{
    auto* pane = new QWidget(this);
    auto* v = new QVBoxLayout(pane);
    v->setContentsMargins(4, 4, 0, 4);
    m_tree = new QTreeWidget(pane);
    m_tree->setObjectName(QStringLiteral("templateSets"));
    m_tree->setHeaderLabel(tr("Template sets"));
    m_tree->setUniformRowHeights(true);
    connect(m_tree, &QTreeWidget::currentItemChanged, this,
            [this](QTreeWidgetItem* current) { onTreeSelection(current); });
    v->addWidget(m_tree, 1);
    // What a run actually used (issue 38 item 3): the set shown against a run's stored templates.
    auto* compareLabel = new QLabel(tr("Compare with run:"), pane);
    m_runCombo = new QComboBox(pane);
    m_runCombo->setObjectName(QStringLiteral("compareRun"));
    m_runCombo->setSizeAdjustPolicy(QComboBox::AdjustToMinimumContentsLengthWithIcon);
    m_runCombo->setMinimumContentsLength(12);
    compareLabel->setBuddy(m_runCombo);
    m_runCombo->addItem(tr("(no run database open)"), 0);
    m_runCombo->setEnabled(false);
    m_runComparison = new QLabel(pane);
    m_runComparison->setObjectName(QStringLiteral("runComparison"));
    m_runComparison->setWordWrap(true);
    m_runComparison->setTextInteractionFlags(Qt::TextSelectableByMouse);
    connect(m_runCombo, &QComboBox::currentIndexChanged, this, &PromptEditorPage::updateRunComparison);
    v->addWidget(compareLabel);
    v->addWidget(m_runCombo);
    v->addWidget(m_runComparison);
    return pane;
}

QWidget* PromptEditorPage::buildEditorPane()
{
    auto* pane = new QWidget(this);
    auto* v = new QVBoxLayout(pane);
    v->setContentsMargins(0, 4, 0, 4);
    v->setSpacing(4);

    auto* toolbar = new QToolBar(pane);
    toolbar->setToolButtonStyle(Qt::ToolButtonTextOnly);
    m_saveAction = new QAction(tr("Save"), this);
    m_saveAction->setShortcut(QKeySequence::Save);
    m_saveAction->setToolTip(tr("Save the template (Ctrl+S); the shipped set saves as a new set"));
    m_revertAction = new QAction(tr("Revert"), this);
    m_revertAction->setToolTip(tr("Back to the saved text"));
    m_saveAsAction = new QAction(tr("Save as new set…"), this);
    m_saveAsAction->setToolTip(tr("Copy this set, with your edits, to a new set of your own"));
    m_diffAction = new QAction(tr("Diff against shipped"), this);
    m_diffAction->setToolTip(tr("Compare this template with the shipped one, side by side"));
    for (QAction* a : {m_saveAction, m_revertAction, m_saveAsAction, m_diffAction}) {
        a->setShortcutContext(Qt::WidgetWithChildrenShortcut);
        addAction(a);
        toolbar->addAction(a);
    }
    connect(m_saveAction, &QAction::triggered, this, [this] { save(); });
    connect(m_revertAction, &QAction::triggered, this, &PromptEditorPage::revert);
    connect(m_saveAsAction, &QAction::triggered, this, &PromptEditorPage::showNameBar);
    connect(m_diffAction, &QAction::triggered, this, &PromptEditorPage::showDiffAgainstShipped);
    v->addWidget(toolbar);

    m_title = new QLabel(pane);
    m_title->setObjectName(QStringLiteral("templateTitle"));
    m_title->setTextFormat(Qt::RichText);
    v->addWidget(m_title);

    m_readOnlyBar = makeBar(pane, QStringLiteral("readOnlyBar"), QStringLiteral("rgba(84,174,255,0.12)"),
                            QStringLiteral("#54aeff"));
    auto* ro = new QHBoxLayout(m_readOnlyBar);
    ro->setContentsMargins(6, 3, 6, 3);
    auto* roLabel = new QLabel(tr("The shipped set is read-only: the wording this build's regimes use (a run keeps "
                                  "what it used; Compare with run, left). Edit freely; Save asks for a name and keeps "
                                  "your edits in a new set."),
                               m_readOnlyBar);
    roLabel->setWordWrap(true);
    ro->addWidget(roLabel, 1);
    v->addWidget(m_readOnlyBar);

    m_pendingBar =
        makeBar(pane, QStringLiteral("pendingBar"), QStringLiteral("rgba(212,167,44,0.15)"), QStringLiteral("#d4a72c"));
    auto* pb = new QHBoxLayout(m_pendingBar);
    pb->setContentsMargins(6, 3, 6, 3);
    m_pendingLabel = new QLabel(m_pendingBar);
    m_pendingLabel->setWordWrap(true);
    m_pendingSave = new QPushButton(tr("Save"), m_pendingBar);
    auto* discard = new QPushButton(tr("Discard changes"), m_pendingBar);
    auto* keep = new QPushButton(tr("Keep editing"), m_pendingBar);
    m_pendingSave->setObjectName(QStringLiteral("pendingSave"));
    discard->setObjectName(QStringLiteral("pendingDiscard"));
    keep->setObjectName(QStringLiteral("pendingKeep"));
    connect(m_pendingSave, &QPushButton::clicked, this, &PromptEditorPage::saveAndSwitch);
    connect(discard, &QPushButton::clicked, this, &PromptEditorPage::discardAndSwitch);
    connect(keep, &QPushButton::clicked, this, &PromptEditorPage::keepEditing);
    pb->addWidget(m_pendingLabel, 1);
    pb->addWidget(m_pendingSave);
    pb->addWidget(discard);
    pb->addWidget(keep);
    v->addWidget(m_pendingBar);

    m_nameBar =
        makeBar(pane, QStringLiteral("nameBar"), QStringLiteral("rgba(84,174,255,0.12)"), QStringLiteral("#54aeff"));
    auto* nb = new QHBoxLayout(m_nameBar);
    nb->setContentsMargins(6, 3, 6, 3);
    m_nameEdit = new QLineEdit(m_nameBar);
    m_nameEdit->setObjectName(QStringLiteral("newSetName"));
    m_nameEdit->setPlaceholderText(tr("name of the new set"));
    auto* create = new QPushButton(tr("Create set"), m_nameBar);
    auto* cancel = new QPushButton(tr("Cancel"), m_nameBar);
    m_nameError = new QLabel(m_nameBar);
    m_nameError->setStyleSheet(QStringLiteral("color: #cf222e;"));
    auto createSet = [this] {
        QString error;
        if (!saveAsNewSet(m_nameEdit->text().trimmed(), &error)) {
            m_nameError->setText(error);
            m_nameError->show();
        }
    };
    connect(create, &QPushButton::clicked, this, createSet);
    connect(m_nameEdit, &QLineEdit::returnPressed, this, createSet);
    connect(cancel, &QPushButton::clicked, this, [this] {
        m_nameBar->hide();
        m_editor->setFocus();
    });
    nb->addWidget(new QLabel(tr("New set:"), m_nameBar));
    nb->addWidget(m_nameEdit, 1);
    nb->addWidget(m_nameError);
    nb->addWidget(create);
    nb->addWidget(cancel);
    v->addWidget(m_nameBar);

    m_editor = new CodeEditor(pane);
    m_editor->setObjectName(QStringLiteral("templateEditor"));
    m_editor->setLanguage(Language::Mustache);
    connect(m_editor, &QPlainTextEdit::textChanged, this, [this] {
        if (!m_loading)
            m_previewTimer->start();
    });
    connect(m_editor->document(), &QTextDocument::modificationChanged, this, [this](bool modified) {
        updateTitle();
        updateActions();
        Q_EMIT modificationChanged(modified);
    });
    v->addWidget(m_editor, 1);

    m_errorBar =
        makeBar(pane, QStringLiteral("errorBar"), QStringLiteral("rgba(255,129,130,0.15)"), QStringLiteral("#cf222e"));
    auto* eb = new QHBoxLayout(m_errorBar);
    eb->setContentsMargins(6, 3, 6, 3);
    m_errorLabel = new QLabel(m_errorBar);
    m_errorLabel->setObjectName(QStringLiteral("errorText"));
    m_errorLabel->setWordWrap(true);
    m_errorLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_errorGo = new QPushButton(m_errorBar);
    connect(m_errorGo, &QPushButton::clicked, this, [this] {
        const int line = m_errorLine;
        if (m_errorFile != m_template && !openTemplate(m_set.dir(), m_errorFile))
            return;
        if (line > 0)
            m_editor->goToLine(line);
        m_editor->setFocus();
    });
    eb->addWidget(m_errorLabel, 1);
    eb->addWidget(m_errorGo);
    v->addWidget(m_errorBar);

    m_message = new QLabel(pane);
    m_message->setObjectName(QStringLiteral("pageMessage"));
    m_message->setWordWrap(true);
    v->addWidget(m_message);
    return pane;
}

QWidget* PromptEditorPage::buildPreviewPane()
{
    auto* pane = new QWidget(this);
    auto* v = new QVBoxLayout(pane);
    v->setContentsMargins(0, 4, 4, 4);
    v->setSpacing(4);
    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    m_taskCombo = new QComboBox(pane);
    m_taskCombo->setObjectName(QStringLiteral("previewTask"));
    m_templateCombo = new QComboBox(pane);
    m_templateCombo->setObjectName(QStringLiteral("previewTemplate"));
    m_turnCombo = new QComboBox(pane);
    m_turnCombo->setObjectName(QStringLiteral("previewTurn"));
    m_turnCombo->addItem(tr("Turn 1"), int(PreviewTurn::First));
    m_turnCombo->addItem(tr("A later turn (feedback on a compile error)"), int(PreviewTurn::Later));
    form->addRow(tr("Task:"), m_taskCombo);
    form->addRow(tr("Renders:"), m_templateCombo);
    form->addRow(tr("Turn:"), m_turnCombo);
    v->addLayout(form);
    for (QComboBox* combo : {m_taskCombo, m_templateCombo, m_turnCombo})
        connect(combo, qOverload<int>(&QComboBox::activated), this, [this] { renderPreviewNow(); });

    m_notes = new QLabel(pane);
    m_notes->setObjectName(QStringLiteral("previewNotes"));
    m_notes->setWordWrap(true);
    m_notes->setStyleSheet(QStringLiteral("color: palette(placeholder-text);"));
    v->addWidget(m_notes);

    m_preview = new QPlainTextEdit(pane);
    m_preview->setObjectName(QStringLiteral("preview"));
    m_preview->setReadOnly(true);
    m_preview->setFont(m_editor ? m_editor->font() : font());
    m_preview->setPlaceholderText(tr("The rendered prompt appears here."));
    m_previewHighlighter = createHighlighter(m_preview->document(), Language::Markdown);
    v->addWidget(m_preview, 1);

    m_previewStats = new QLabel(pane);
    m_previewStats->setObjectName(QStringLiteral("previewStats"));
    v->addWidget(m_previewStats);

    m_taskCombo->addItem(tr("(no task data yet)"));
    return pane;
}

void PromptEditorPage::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (m_previewHighlighter &&
        (event->type() == QEvent::PaletteChange || event->type() == QEvent::ApplicationPaletteChange))
        applyPalette(m_previewHighlighter, m_preview->palette());
}

// ---- sets and the tree -----------------------------------------------------------------------------

void PromptEditorPage::refreshSets()
{
    m_userSets = TemplateSet::userSets(m_userRoot);
    populateTree();
}

TemplateSet PromptEditorPage::findSet(const QString& dir) const
{
    const QString clean = QDir::cleanPath(QDir(dir).absolutePath());
    if (clean == m_shipped.dir())
        return m_shipped;
    for (const TemplateSet& s : m_userSets)
        if (s.dir() == clean)
            return s;
    return {};
}

void PromptEditorPage::setRuns(const QList<RunInfo>& runs)
{
    const qint64 shown = m_runCombo->currentData().toLongLong();
    m_runs = runs;
    {
        const QSignalBlocker block(m_runCombo);
        m_runCombo->clear();
        m_runCombo->addItem(runs.isEmpty() ? tr("(no run in the database)") : tr("(none)"), 0);
        for (const RunInfo& run : runs)
            m_runCombo->addItem(runLabel(run), run.id);
        const int at = m_runCombo->findData(shown);
        m_runCombo->setCurrentIndex(at > 0 ? at : 0);
        m_runCombo->setEnabled(!runs.isEmpty());
    }
    updateRunComparison();
}

bool PromptEditorPage::compareWithRun(qint64 runId)
{
    const int at = m_runCombo->findData(runId);
    if (at < 0)
        return false;
    m_runCombo->setCurrentIndex(at);
    updateRunComparison();
    return true;
}

QString PromptEditorPage::runComparisonText() const
{
    return m_runComparison->text();
}

void PromptEditorPage::updateRunComparison()
{
    m_runMatch.clear();
    const qint64 id = m_runCombo->currentData().toLongLong();
    const auto run = std::find_if(m_runs.cbegin(), m_runs.cend(), [id](const RunInfo& r) { return r.id == id; });
    if (id == 0 || run == m_runs.cend()) {
        m_runComparison->clear();
        populateTree();
        return;
    }
    // Runs store templates by name without ".mustache" (RunConfig::templates).
    QMap<QString, QString> texts;
    QHash<QString, QString> pathOf;
    for (const QString& path : m_set.templates()) {
        const QString name = path.endsWith(QLatin1String(".mustache")) ? path.chopped(9) : path;
        texts.insert(name, m_set.load(path).value_or(QString()));
        pathOf.insert(name, path);
    }
    const RunConfig& config = run->config;
    QStringList differ, onlyInRun;
    int same = 0, unused = 0;
    for (const TemplateComparison& c : compareTemplates(texts, config)) {
        if (pathOf.contains(c.name))
            m_runMatch.insert(pathOf.value(c.name), c.match);
        switch (c.match) {
        case TemplateMatch::Same: ++same; break;
        case TemplateMatch::Differs: differ << c.name; break;
        case TemplateMatch::NotUsedByRun: ++unused; break;
        case TemplateMatch::OnlyInRun: onlyInRun << c.name; break;
        }
    }
    const QString setName = m_set.isReadOnly() ? tr("the shipped set") : tr("set \u201c%1\u201d").arg(m_set.name());
    QString text;
    if (config.templates.isEmpty())
        text = tr("%1 stored no templates (an import, or a run from before templates were kept).").arg(runLabel(*run));
    else
        text = tr("%1 used %2 templates (%3): %4 as in %5")
                   .arg(runLabel(*run))
                   .arg(config.templates.size())
                   .arg(promptSetName(config))
                   .arg(same)
                   .arg(setName) +
               (differ.isEmpty()
                    ? QString()
                    : tr("; %1 worded otherwise: %2").arg(differ.size()).arg(differ.join(QStringLiteral(", ")))) +
               (onlyInRun.isEmpty()
                    ? QString()
                    : tr("; %1 not in this set: %2").arg(onlyInRun.size()).arg(onlyInRun.join(QStringLiteral(", ")))) +
               tr("; %1 of this set's not used by it.").arg(unused);
    m_runComparison->setText(text);
    populateTree();
}

void PromptEditorPage::populateTree()
{
    const QSignalBlocker block(m_tree);
    m_tree->clear();
    auto addSet = [this](const TemplateSet& set) {
        auto* top = new QTreeWidgetItem(m_tree);
        top->setData(0, kSetDirRole, set.dir());
        top->setToolTip(0, set.dir());
        QHash<QString, TemplateSet::Difference::Kind> differences;
        if (set.isReadOnly()) {
            top->setText(0, tr("shipped (read-only)"));
        } else {
            const auto diffs = set.compare(m_shipped);
            for (const auto& d : diffs)
                differences.insert(d.templatePath, d.kind);
            top->setText(0, set.name());
            top->setToolTip(0, tr("%1\n%2 templates differ from the shipped set").arg(set.dir()).arg(diffs.size()));
        }
        QFont bold = top->font(0);
        bold.setBold(true);
        top->setFont(0, bold);
        QHash<QString, QTreeWidgetItem*> folders;
        for (const QString& path : set.templates()) {
            const QString folder = path.section(QLatin1Char('/'), 0, -2);
            QTreeWidgetItem*& parent = folders[folder];
            if (!parent) {
                parent = new QTreeWidgetItem(top, {folder.isEmpty() ? QStringLiteral("/") : folder});
                parent->setData(0, kSetDirRole, set.dir());
            }
            auto* item = new QTreeWidgetItem(parent, {path.section(QLatin1Char('/'), -1)});
            item->setData(0, kSetDirRole, set.dir());
            item->setData(0, kPathRole, path);
            item->setToolTip(0, path);
            // Against the run chosen under the tree: '=' its wording, '≠' other wording, '∅' unused.
            if (set.dir() == m_set.dir()) {
                const auto match = m_runMatch.constFind(path);
                if (match != m_runMatch.cend()) {
                    const bool same = match.value() == TemplateMatch::Same;
                    const bool unused = match.value() == TemplateMatch::NotUsedByRun;
                    item->setText(0, item->text(0) + (same ? tr("  = run") : unused ? tr("  ∅ run") : tr("  ≠ run")));
                    item->setForeground(0, same ? item->foreground(0)
                                                : QBrush(unused ? Qt::gray : QColor(0xb0, 0x1e, 0x1e)));
                }
            }
            const auto diff = differences.constFind(path);
            if (diff != differences.constEnd()) {
                const bool added = diff.value() == TemplateSet::Difference::Added;
                item->setText(0, item->text(0) + (added ? tr("  (new)") : QStringLiteral("  ●")));
                item->setToolTip(0, added ? tr("%1: not in the shipped set").arg(path)
                                          : tr("%1: differs from the shipped template").arg(path));
            }
        }
        top->setExpanded(true);
        for (QTreeWidgetItem* f : std::as_const(folders))
            f->setExpanded(set.dir() == m_set.dir());
    };
    addSet(m_shipped);
    for (const TemplateSet& s : std::as_const(m_userSets))
        addSet(s);
    if (QTreeWidgetItem* current = itemFor(m_set.dir(), m_template)) {
        m_tree->setCurrentItem(current);
        m_tree->scrollToItem(current);
    }
}

QTreeWidgetItem* PromptEditorPage::itemFor(const QString& setDir, const QString& templatePath) const
{
    if (templatePath.isEmpty())
        return nullptr;
    for (QTreeWidgetItemIterator it(m_tree); *it; ++it)
        if ((*it)->data(0, kSetDirRole).toString() == setDir && (*it)->data(0, kPathRole).toString() == templatePath)
            return *it;
    return nullptr;
}

void PromptEditorPage::onTreeSelection(QTreeWidgetItem* current)
{
    if (!current)
        return;
    const QString path = current->data(0, kPathRole).toString();
    if (path.isEmpty())
        return; // a set or a folder
    if (!openTemplate(current->data(0, kSetDirRole).toString(), path)) {
        // Stay on the template being edited: the bar asks what to do with its changes.
        const QSignalBlocker block(m_tree);
        if (QTreeWidgetItem* item = itemFor(m_set.dir(), m_template))
            m_tree->setCurrentItem(item);
    }
}

// ---- the template ---------------------------------------------------------------------------------

bool PromptEditorPage::isModified() const
{
    return m_editor->document()->isModified();
}

bool PromptEditorPage::openTemplate(const QString& setDir, const QString& templatePath)
{
    const TemplateSet set = findSet(setDir);
    if (!set.exists() || !set.contains(templatePath)) {
        showMessage(tr("No template %1 in %2").arg(templatePath, setDir), true);
        return false;
    }
    if (set.dir() == m_set.dir() && templatePath == m_template)
        return true;
    if (isModified()) {
        m_pendingSetDir = set.dir();
        m_pendingTemplate = templatePath;
        m_pendingLabel->setText(
            tr("%1 has unsaved changes. Save them before opening %2?").arg(m_template, templatePath));
        m_pendingSave->setText(m_set.isReadOnly() ? tr("Save as new set…") : tr("Save"));
        m_pendingBar->show();
        return false;
    }
    loadTemplate(set, templatePath);
    return true;
}

void PromptEditorPage::loadTemplate(const TemplateSet& set, const QString& templatePath)
{
    QString error;
    const std::optional<QString> text = set.load(templatePath, &error);
    if (!text) {
        showMessage(error, true);
        return;
    }
    const bool setChanged = set.dir() != m_set.dir();
    m_set = set;
    m_template = templatePath;
    m_loading = true;
    m_editor->setReadOnly(false);
    m_editor->setPlainText(*text);
    m_editor->document()->setModified(false);
    m_loading = false;
    m_editor->clearMarkedLine();
    m_pendingBar->hide();
    m_pendingSetDir.clear();
    m_pendingTemplate.clear();
    m_message->clear();
    m_readOnlyBar->setVisible(set.isReadOnly());
    if (!set.isReadOnly())
        m_nameBar->hide();
    {
        const QSignalBlocker block(m_tree);
        if (setChanged)
            populateTree();
        if (QTreeWidgetItem* item = itemFor(set.dir(), templatePath))
            m_tree->setCurrentItem(item);
    }
    if (setChanged)
        updateRunComparison();
    fillPreviewTemplates();
    if (set.roleTemplates().contains(templatePath))
        setPreviewTemplate(templatePath);
    else
        chooseTemplateForPartial();
    updateTitle();
    updateActions();
    renderPreviewNow();
}

void PromptEditorPage::updateTitle()
{
    if (m_template.isEmpty()) {
        m_title->setText(tr("<i>No template open</i>"));
        return;
    }
    QString text =
        QStringLiteral("<b>%1</b> &nbsp;·&nbsp; %2")
            .arg(m_template.toHtmlEscaped(),
                 m_set.isReadOnly() ? tr("shipped set (read-only)") : tr("set “%1”").arg(m_set.name().toHtmlEscaped()));
    if (isModified())
        text += QStringLiteral(" &nbsp;·&nbsp; <span style=\"color:#bc4c00\">● %1</span>").arg(tr("unsaved changes"));
    m_title->setText(text);
}

void PromptEditorPage::updateActions()
{
    const bool open = !m_template.isEmpty();
    m_saveAction->setEnabled(open && isModified());
    m_revertAction->setEnabled(open && isModified());
    m_saveAsAction->setEnabled(open);
    m_diffAction->setEnabled(open && m_shipped.exists());
}

void PromptEditorPage::showMessage(const QString& text, bool error)
{
    m_message->setStyleSheet(error ? QStringLiteral("color: #cf222e;") : QString());
    m_message->setText(text);
}

bool PromptEditorPage::save()
{
    if (m_template.isEmpty())
        return false;
    if (m_set.isReadOnly()) {
        showNameBar();
        return false;
    }
    QString error;
    if (!m_set.save(m_template, editorText(m_editor), &error)) {
        showMessage(error, true);
        return false;
    }
    m_editor->document()->setModified(false);
    showMessage(tr("Saved %1 in set “%2”.").arg(m_template, m_set.name()), false);
    populateTree(); // its "differs from shipped" marks
    Q_EMIT templateSaved(m_set.dir(), m_template);
    return true;
}

void PromptEditorPage::revert()
{
    if (m_template.isEmpty())
        return;
    const int line = m_editor->textCursor().blockNumber() + 1;
    const TemplateSet set = m_set;
    const QString path = m_template;
    m_template.clear(); // loadTemplate reloads even the same path
    m_editor->document()->setModified(false);
    loadTemplate(set, path);
    m_editor->goToLine(line);
    showMessage(tr("Reverted %1 to the saved text.").arg(path), false);
}

void PromptEditorPage::showNameBar()
{
    if (m_template.isEmpty())
        return;
    // A free name: "<set>-edited", "<set>-edited-2", …
    const QString base = (m_set.isReadOnly() ? QStringLiteral("my-prompts") : m_set.name() + QStringLiteral("-copy"));
    QString name = base;
    for (int n = 2; QFileInfo::exists(QDir(m_userRoot).filePath(name)); ++n)
        name = QStringLiteral("%1-%2").arg(base).arg(n);
    m_nameEdit->setText(name);
    m_nameEdit->selectAll();
    m_nameError->clear();
    m_nameError->hide();
    m_nameBar->show();
    m_nameEdit->setFocus();
}

bool PromptEditorPage::saveAsNewSet(const QString& name, QString* error)
{
    if (m_template.isEmpty()) {
        if (error)
            *error = tr("no template is open");
        return false;
    }
    QMap<QString, QString> edits;
    if (isModified())
        edits.insert(m_template, editorText(m_editor));
    QString why;
    const std::optional<TemplateSet> made = TemplateSet::saveAs(m_set, name, edits, m_userRoot, &why);
    if (!made) {
        if (error)
            *error = why;
        showMessage(why, true);
        return false;
    }
    const QString pendingSet = m_pendingSetDir;
    const QString pendingTemplate = m_pendingTemplate;
    m_nameBar->hide();
    m_userSets = TemplateSet::userSets(m_userRoot);
    m_editor->document()->setModified(false); // the edits are in the new set now
    loadTemplate(findSet(made->dir()), m_template);
    showMessage(tr("Saved as the new set “%1” (%2).").arg(made->name(), made->dir()), false);
    Q_EMIT setCreated(made->dir());
    Q_EMIT templateSaved(made->dir(), m_template);
    if (!pendingTemplate.isEmpty())
        openTemplate(pendingSet, pendingTemplate);
    return true;
}

void PromptEditorPage::saveAndSwitch()
{
    if (m_set.isReadOnly()) {
        showNameBar(); // saveAsNewSet goes on to the pending template
        return;
    }
    const QString set = m_pendingSetDir;
    const QString path = m_pendingTemplate;
    if (save() && !path.isEmpty())
        openTemplate(set, path);
}

void PromptEditorPage::discardAndSwitch()
{
    const QString set = m_pendingSetDir;
    const QString path = m_pendingTemplate;
    m_editor->document()->setModified(false);
    if (!path.isEmpty())
        openTemplate(set, path);
    m_pendingBar->hide();
}

void PromptEditorPage::keepEditing()
{
    m_pendingSetDir.clear();
    m_pendingTemplate.clear();
    m_pendingBar->hide();
    m_editor->setFocus();
}

// ---- the diff against the shipped template ------------------------------------------------------------

void PromptEditorPage::showDiffAgainstShipped()
{
    if (m_template.isEmpty())
        return;
    if (!m_diffDialog) {
        auto* dialog = new QDialog(this);
        dialog->setObjectName(QStringLiteral("diffDialog"));
        dialog->setModal(false);
        auto* v = new QVBoxLayout(dialog);
        m_diffCaption = new QLabel(dialog);
        m_diffCaption->setWordWrap(true);
        auto* toolbar = new QToolBar(dialog);
        toolbar->setToolButtonStyle(Qt::ToolButtonTextOnly);
        auto* previous = toolbar->addAction(tr("Previous change"));
        previous->setShortcuts({QKeySequence(Qt::SHIFT | Qt::Key_F7), QKeySequence(Qt::ALT | Qt::Key_Up)});
        auto* next = toolbar->addAction(tr("Next change"));
        next->setShortcuts({QKeySequence(Qt::Key_F7), QKeySequence(Qt::ALT | Qt::Key_Down)});
        m_diffCount = new QLabel(dialog);
        toolbar->addSeparator();
        toolbar->addWidget(m_diffCount);
        m_diffView = new SideBySideDiffView(dialog);
        connect(previous, &QAction::triggered, m_diffView,
                [this] { m_diffView->setCurrentChange(qMax(0, m_diffView->currentChange() - 1)); });
        connect(next, &QAction::triggered, m_diffView, [this] {
            if (m_diffView->currentChange() + 1 < m_diffView->changeCount())
                m_diffView->setCurrentChange(m_diffView->currentChange() + 1);
        });
        connect(m_diffView, &SideBySideDiffView::currentChangeChanged, m_diffCount, [this](int index) {
            const int count = m_diffView->changeCount();
            m_diffCount->setText(count == 0 ? tr("changes: 0 (the same text)")
                                            : tr("change %1 of %2 · changes: %2").arg(index + 1).arg(count));
        });
        v->addWidget(m_diffCaption);
        v->addWidget(toolbar);
        v->addWidget(m_diffView, 1);
        dialog->resize(1100, 700);
        m_diffDialog = dialog;
    }
    QString shippedText;
    QString caption;
    if (const auto text = m_shipped.load(m_template)) {
        shippedText = *text;
        caption =
            m_set.isReadOnly()
                ? tr("Left: the shipped %1. Right: the editor's text (your unsaved edits).").arg(m_template)
                : tr("Left: the shipped %1. Right: %1 of set “%2” as in the editor.").arg(m_template, m_set.name());
    } else {
        caption = tr("%1 is not in the shipped set: everything on the right is new.").arg(m_template);
    }
    m_diffCaption->setText(caption);
    m_diffDialog->setWindowTitle(
        tr("%1: shipped ↔ %2").arg(m_template, m_set.isReadOnly() ? tr("editor") : m_set.name()));
    m_diffView->setTexts(shippedText, editorText(m_editor), Language::Mustache);
    m_diffView->setCurrentChange(m_diffView->changeCount() > 0 ? 0 : -1);
    m_diffDialog->show();
    m_diffDialog->raise();
}

// ---- the preview ----------------------------------------------------------------------------------------

void PromptEditorPage::setTaskData(const TaskSpec& task, const QJsonObject& analyze, const QJsonObject& profile)
{
    const QString id = task.id;
    if (id.isEmpty())
        return;
    const bool known = m_tasks.contains(id);
    m_tasks.insert(id, TaskData{task.title, task.json, analyze, profile});
    if (!known) {
        m_taskOrder << id;
        const QString current = previewTask();
        m_taskCombo->clear();
        for (const QString& t : std::as_const(m_taskOrder)) {
            const QString title = m_tasks.value(t).title;
            m_taskCombo->addItem(title.isEmpty() ? t : QStringLiteral("%1 · %2").arg(t, title), t);
        }
        const int index = m_taskCombo->findData(current.isEmpty() ? id : current);
        m_taskCombo->setCurrentIndex(qMax(0, index));
    }
    if (previewTask() == id)
        m_previewTimer->start();
}

void PromptEditorPage::setDevice(const DeviceFacts& device)
{
    m_device = device;
    m_previewTimer->start();
}

void PromptEditorPage::clearTaskData()
{
    m_tasks.clear();
    m_taskOrder.clear();
    m_taskCombo->clear();
    m_taskCombo->addItem(tr("(no task data yet)"));
    m_previewTimer->start();
}

void PromptEditorPage::setPreviewTask(const QString& taskId)
{
    const int index = m_taskCombo->findData(taskId);
    if (index >= 0) {
        m_taskCombo->setCurrentIndex(index);
        renderPreviewNow();
    }
}

void PromptEditorPage::setPreviewTemplate(const QString& templatePath)
{
    const int index = m_templateCombo->findData(templatePath);
    if (index >= 0 && index != m_templateCombo->currentIndex()) {
        m_templateCombo->setCurrentIndex(index);
        m_previewTimer->start();
    }
}

void PromptEditorPage::setPreviewTurn(PreviewTurn turn)
{
    m_turnCombo->setCurrentIndex(m_turnCombo->findData(int(turn)));
    renderPreviewNow();
}

QString PromptEditorPage::previewTask() const
{
    return m_taskCombo->currentData().toString();
}

QString PromptEditorPage::previewTemplate() const
{
    return m_templateCombo->currentData().toString();
}

void PromptEditorPage::fillPreviewTemplates()
{
    const QString current = previewTemplate();
    m_templateCombo->clear();
    for (const QString& path : m_set.roleTemplates())
        m_templateCombo->addItem(path, path);
    const int index = m_templateCombo->findData(current);
    m_templateCombo->setCurrentIndex(index >= 0 ? index : 0);
}

void PromptEditorPage::chooseTemplateForPartial()
{
    // The partial's name as {{> name}} writes it; keep the current choice when it includes it,
    // else the first role template that does (through other partials too).
    const QString name = QFileInfo(m_template).completeBaseName();
    QHash<QString, QSet<QString>> includes; // partial name -> partials it includes
    for (const QString& p : m_set.partials())
        includes.insert(QFileInfo(p).completeBaseName(), includedPartials(m_set.load(p).value_or(QString())));
    auto reaches = [&](const QString& roleTemplate) {
        QSet<QString> seen;
        QStringList queue = includedPartials(m_set.load(roleTemplate).value_or(QString())).values();
        while (!queue.isEmpty()) {
            const QString next = queue.takeFirst();
            if (next == name)
                return true;
            if (seen.contains(next))
                continue;
            seen.insert(next);
            queue << includes.value(next).values();
        }
        return false;
    };
    if (!previewTemplate().isEmpty() && reaches(previewTemplate()))
        return;
    for (int i = 0; i < m_templateCombo->count(); ++i) {
        if (reaches(m_templateCombo->itemData(i).toString())) {
            m_templateCombo->setCurrentIndex(i);
            return;
        }
    }
}

bool PromptEditorPage::mirrorSet(QString* error)
{
    if (!m_mirror) {
        m_mirror = std::make_unique<QTemporaryDir>();
        if (!m_mirror->isValid()) {
            *error = tr("cannot create a temporary folder for the preview: %1").arg(m_mirror->errorString());
            m_mirror.reset();
            return false;
        }
    }
    // The whole set every time: a few small files, and the mirror then never holds text that
    // was discarded in the editor.
    const QDir mirror(m_mirror->path());
    for (const QString& entry : mirror.entryList(QDir::AllEntries | QDir::NoDotAndDotDot | QDir::Hidden)) {
        const QFileInfo info(mirror.filePath(entry));
        if (info.isDir())
            QDir(info.filePath()).removeRecursively();
        else
            QFile::remove(info.filePath());
    }
    const QDir source(m_set.dir());
    QDirIterator it(m_set.dir(), {QStringLiteral("*.mustache")}, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString from = it.next();
        const QString to = mirror.filePath(source.relativeFilePath(from));
        QDir().mkpath(QFileInfo(to).absolutePath());
        if (!QFile::copy(from, to)) {
            *error = tr("cannot copy %1 for the preview").arg(from);
            return false;
        }
    }
    const QString target = mirror.filePath(m_template);
    QDir().mkpath(QFileInfo(target).absolutePath());
    QFile f(target);
    if (!f.open(QIODevice::WriteOnly | QIODevice::Truncate)) {
        *error = tr("cannot write the preview copy of %1: %2").arg(m_template, f.errorString());
        return false;
    }
    f.write(editorText(m_editor).toUtf8());
    return true;
}

QJsonObject PromptEditorPage::previewContext(const QString& templatePath, QStringList* notes) const
{
    // The regime and role the template is rendered for: of every regime a run can use (the built-ins
    // and the user's, regimefile.h), the one named by the template's folder if its roles name this
    // template, else any whose roles do; else the folder's regime with the file's name as the role.
    const QString folder = templatePath.section(QLatin1Char('/'), 0, 0);
    const RegimeCatalog catalog = regimeCatalog();
    const auto roleOf = [&templatePath](const Regime& r) {
        for (auto it = r.roles.cbegin(); it != r.roles.cend(); ++it)
            if (it.value() == templatePath)
                return it.key();
        return QString();
    };
    const RegimeEntry* entry = catalog.find(folder);
    QString role = entry ? roleOf(entry->regime) : QString();
    for (const RegimeEntry& e : catalog.entries) {
        if (!role.isEmpty())
            break;
        role = roleOf(e.regime);
        if (!role.isEmpty())
            entry = &e;
    }
    if (role.isEmpty())
        role = QFileInfo(templatePath).completeBaseName();
    const QString regimeName = entry ? entry->regime.name : folder;
    const std::optional<Regime> regime = entry ? std::optional<Regime>(entry->regime) : std::nullopt;
    const bool later = m_turnCombo->currentData().toInt() == int(PreviewTurn::Later);
    const TaskData data = m_tasks.value(previewTask());
    // An unknown regime folder (a user's own) gets the profile when there is one.
    const bool useProfile = regime ? regime->useProfile : true;

    QJsonObject feedback;
    if (later)
        feedback = QJsonObject{
            {QStringLiteral("status"), QStringLiteral("compile_error")},
            {QStringLiteral("stage"), QStringLiteral("compile")},
            {QStringLiteral("message"), placeholder(QStringLiteral("feedback.message"), tr("the evaluator's message"))},
            {QStringLiteral("compile"),
             QJsonObject{
                 {QStringLiteral("ok"), false},
                 {QStringLiteral("log"), placeholder(QStringLiteral("feedback.compile_log"), tr("NVRTC's log"))}}},
            {QStringLiteral("answer"),
             placeholder(QStringLiteral("previous_answer"), tr("the previous turn's answer"))},
        };
    // The context a run renders this role with (RunController::context), with placeholders for
    // the notes of the roles before this one.
    Regime shown = regime ? *regime : Regime();
    shown.useProfile = useProfile;
    if (later)
        shown.turns = qMax(2, shown.turns);
    auto has = [&](const QString& r) { return regime && regime->roles.contains(r); };
    const QString rewriteRole = regime ? regime->rewriteRole() : QString();
    const bool critic = rewriteRole == RegimeRole::Critic;
    TurnNotes turnNotes;
    turnNotes.turn = later ? 2 : 1;
    turnNotes.feedback = feedback;
    if (has(RegimeRole::Analyzer) && (later || role != RegimeRole::Analyzer))
        turnNotes.analysis = placeholder(QStringLiteral("analysis"), tr("the analyzer's notes"));
    if (has(RegimeRole::Researcher) && (later || (role != RegimeRole::Analyzer && role != RegimeRole::Researcher)))
        turnNotes.research = placeholder(QStringLiteral("research"), tr("the researcher's notes"));
    if (later && role != rewriteRole)
        turnNotes.rewrite = critic ? placeholder(QStringLiteral("critique"), tr("the critic's notes"))
                                   : placeholder(QStringLiteral("diagnosis"), tr("the triager's diagnosis"));
    const QJsonObject c =
        RunController::context(RunTaskInput{data.task, data.analyze, data.profile, m_device.raw, {}}, shown, turnNotes);

    QStringList placeholders;
    for (const char* name : {"analysis", "research", "diagnosis", "critique"})
        if (c.value(QLatin1String(name)).isString())
            placeholders << QLatin1String(name);
    if (later)
        placeholders << QStringLiteral("previous_answer") << QStringLiteral("feedback");
    if (data.task.isEmpty())
        *notes << tr("No task data yet (tasks arrive from the worker): task values are empty.");
    else if (data.analyze.isEmpty())
        *notes << tr("No analyze data for %1: op_chain, ops, flops, bytes_* and intensity_* are false.")
                      .arg(previewTask());
    if (!data.task.isEmpty() && useProfile && data.profile.isEmpty())
        *notes << tr("No profile for %1: top_ops is empty and profile_total false.").arg(previewTask());
    if (!m_device.available)
        *notes << tr("No GPU known: device and roofline_verdict are false.");
    if (!regime)
        *notes << tr("“%1” is not a regime (built in, or of yours in %2): rendered as a turn of a one-role regime.")
                      .arg(regimeName, QDir::toNativeSeparators(userRegimesDir()));
    if (!placeholders.isEmpty())
        *notes << tr("Placeholders in [brackets]: %1.").arg(placeholders.join(QStringLiteral(", ")));
    return c;
}

void PromptEditorPage::renderPreviewNow()
{
    m_previewTimer->stop();
    if (m_template.isEmpty())
        return;
    const QString target = previewTemplate();
    if (target.isEmpty()) {
        m_preview->clear();
        m_notes->setText(tr("This set has no role template to render."));
        return;
    }
    QString error;
    if (!mirrorSet(&error)) {
        showRenderError(error, QString(), 0);
        Q_EMIT previewRendered(false, error);
        return;
    }
    QStringList notes;
    const QJsonObject context = previewContext(target, &notes);
    if (target != m_template && !m_template.startsWith(QLatin1String("partials/")))
        notes.prepend(tr("Rendering %1, not the template being edited.").arg(target));
    m_notes->setText(notes.join(QLatin1Char('\n')));

    const PromptRenderer renderer(m_mirror->path());
    const PromptRenderer::RenderResult result = renderer.render(target, context);
    if (!result.ok) {
        showRenderError(result.error, result.file, result.line);
        m_previewStats->setText(tr("The preview shows the last text that rendered."));
        Q_EMIT previewRendered(false, result.error);
        return;
    }
    clearRenderError();
    const int scroll = m_preview->verticalScrollBar() ? m_preview->verticalScrollBar()->value() : 0;
    m_preview->setPlainText(result.text);
    m_preview->verticalScrollBar()->setValue(scroll);
    m_previewStats->setText(tr("%1 · %2 lines, %3 characters (about %4 tokens)")
                                .arg(target)
                                .arg(result.text.count(QLatin1Char('\n')))
                                .arg(result.text.size())
                                .arg((result.text.size() + 3) / 4));
    Q_EMIT previewRendered(true, QString());
}

void PromptEditorPage::showRenderError(const QString& error, const QString& file, int line)
{
    m_errorLabel->setText(error);
    m_errorFile = file;
    m_errorLine = line;
    if (file == m_template && line > 0) {
        m_editor->setMarkedLine(line, error);
        m_errorGo->setText(tr("Go to line %1").arg(line));
        m_errorGo->show();
    } else if (!file.isEmpty() && file != m_template && m_set.contains(file)) {
        m_editor->clearMarkedLine();
        m_errorGo->setText(tr("Open %1").arg(file));
        m_errorGo->show();
    } else {
        m_editor->clearMarkedLine();
        m_errorGo->hide();
    }
    m_errorBar->show();
}

void PromptEditorPage::clearRenderError()
{
    m_errorLabel->clear();
    m_errorFile.clear();
    m_errorLine = 0;
    m_editor->clearMarkedLine();
    m_errorBar->hide();
}

QString PromptEditorPage::previewText() const
{
    return m_preview->toPlainText();
}

QString PromptEditorPage::errorText() const
{
    return m_errorBar->isHidden() ? QString() : m_errorLabel->text();
}

int PromptEditorPage::errorLine() const
{
    return m_editor->markedLine();
}

QString PromptEditorPage::previewNotes() const
{
    return m_notes->text();
}

QString PromptEditorPage::pendingSwitchMessage() const
{
    return m_pendingBar->isHidden() ? QString() : m_pendingLabel->text();
}

} // namespace kwb::app
