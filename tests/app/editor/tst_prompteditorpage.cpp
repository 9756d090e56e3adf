// PromptEditorPage against the shipped prompts/ and a temporary folder of user sets: the preview
// renders a real role template for task L2/1 (worker-shaped JSON, as tst_promptrenderer uses);
// typing a broken tag shows the renderer's error with its line, marked in the editor, after the
// debounce; the shipped set is never written (Save asks for a new set); save, revert, the
// unsaved-changes bar, a partial's preview, the diff against the shipped template; a screenshot.

#include "app/editor/codeeditor.h"
#include "app/editor/prompteditorpage.h"
#include "app/editor/sidebysidediffview.h"
#include "core/config/regime.h"
#include "core/config/runconfig.h"
#include "core/run/regimefile.h"

#include <QAbstractItemModelTester>
#include <QDialog>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFrame>
#include <QImage>
#include <QJsonDocument>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QSet>
#include <QSignalSpy>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>
#include <QTextBlock>
#include <QTreeWidget>
#include <QTreeWidgetItemIterator>

#include <memory>

using namespace kwb;
using namespace kwb::app;

namespace {

QJsonObject json(const char* text)
{
    QJsonParseError error;
    const QJsonDocument doc = QJsonDocument::fromJson(QByteArray(text), &error);
    if (error.error != QJsonParseError::NoError)
        qFatal("fixture JSON: %s", qPrintable(error.errorString()));
    return doc.object();
}

// Quotes inside the JSON strings are written \u0022: moc 6.4 misreads \" in a raw string literal
// and then finds no test class.
// L2/1 as the worker reports it (`tasks`, `analyze`), trimmed by hand.
const char* kTask = R"({"id":"L2/1","level":2,"number":1,"title":"Conv2d, ReLU, bias add",
 "source":"level2/1_Conv2D_ReLU_BiasAdd.py","description":"Conv2d (64 -> 128, kernel 3), ReLU, then a per-channel bias.",
 "forward":"\ndef forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:\n    x = torch.conv2d(x, p[\u0022conv.weight\u0022], p[\u0022conv.bias\u0022], [1, 1], [0, 0], [1, 1], 1)\n    x = torch.relu(x)\n    return x + p[\u0022bias\u0022]\n",
 "inputs":[{"name":"x","kind":"tensor","shape":["N","C_in","H","W"],"full":[128,64,128,128],"dtype":"float32"}],
 "params":[{"name":"conv.weight","full":[128,64,3,3]},{"name":"conv.bias","full":[128]},{"name":"bias","full":[128,1,1]}]})";

const char* kAnalyze = R"({"task":"L2/1","scale":"full","output_shape":[128,128,126,126],
 "ops":[{"index":0,"op":"aten::conv2d","category":"conv","output":[128,128,126,126],"flops":239767683072,"bytes":654311424},
        {"index":1,"op":"aten::relu","category":"elementwise","output":[128,128,126,126],"flops":260112384,"bytes":2080899072},
        {"index":2,"op":"aten::add","category":"elementwise","output":[128,128,126,126],"flops":260112384,"bytes":2080899584}],
 "flops":240287907840,"bytes_unfused":4816110080,"bytes_fused":1575010816})";

/// The set the page is given as its shipped one: the workbench set (tests/app/editor/CMakeLists.txt).
QString shippedDir()
{
    return QStringLiteral(KWB_EDITOR_SET_DIR);
}

QString readText(const QString& path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

/// Puts the cursor at the end of line `line` (1-based).
void cursorToEndOfLine(CodeEditor* editor, int line)
{
    QTextCursor c(editor->document()->findBlockByNumber(line - 1));
    c.movePosition(QTextCursor::EndOfBlock);
    editor->setTextCursor(c);
}

bool barVisible(const PromptEditorPage& page, const char* name)
{
    auto* bar = page.findChild<QFrame*>(QString::fromLatin1(name));
    return bar && bar->isVisible();
}

int distinctColours(const QImage& image)
{
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 2)
        for (int x = 0; x < image.width(); x += 2)
            colours.insert(image.pixel(x, y));
    return int(colours.size());
}

} // namespace

class TestPromptEditorPage : public QObject
{
    Q_OBJECT

    std::unique_ptr<QTemporaryDir> m_root;
    std::unique_ptr<PromptEditorPage> m_page;

    /// A page over the shipped set and an empty user-sets folder, shown, with L2/1's data.
    PromptEditorPage& freshPage(bool withAnalyze = true)
    {
        m_page.reset();
        m_root = std::make_unique<QTemporaryDir>();
        m_page = std::make_unique<PromptEditorPage>(shippedDir(), m_root->path());
        m_page->setTaskData(decodeTaskSpec(json(kTask)), withAnalyze ? json(kAnalyze) : QJsonObject());
        m_page->resize(1500, 900);
        m_page->show();
        if (!QTest::qWaitForWindowExposed(m_page.get()))
            qFatal("the page did not show");
        return *m_page;
    }

    /// A user set "mine" (a copy of the shipped one) with `path` open in it.
    PromptEditorPage& pageWithUserSet(const QString& path)
    {
        PromptEditorPage& page = freshPage();
        QString error;
        if (!page.saveAsNewSet(QStringLiteral("mine"), &error))
            qFatal("save as: %s", qPrintable(error));
        page.openTemplate(page.currentSet().dir(), path);
        return page;
    }

private Q_SLOTS:
    void cleanup()
    {
        m_page.reset();
        m_root.reset();
    }

    void opensTheShippedSetReadOnly()
    {
        PromptEditorPage& page = freshPage();
        QAbstractItemModelTester tester(page.setTree()->model(),
                                        QAbstractItemModelTester::FailureReportingMode::QtTest);
        QVERIFY(page.currentSet().isReadOnly());
        QCOMPARE(page.currentTemplate(), QStringLiteral("agent/analyzer.mustache"));
        QCOMPARE(page.setTree()->topLevelItemCount(), 1);
        QCOMPARE(page.setTree()->topLevelItem(0)->text(0), QStringLiteral("shipped (read-only)"));
        QCOMPARE(page.setTree()->currentItem()->text(0), QStringLiteral("analyzer.mustache"));
        QVERIFY(barVisible(page, "readOnlyBar"));
        QVERIFY(!page.isModified());
        QVERIFY(page.editor()->toPlainText().startsWith(QLatin1String("{{!")));
        QVERIFY(page.findChild<QLabel*>(QStringLiteral("templateTitle"))->text().contains(QLatin1String("read-only")));
    }

    void previewRendersARealTemplateForATask()
    {
        PromptEditorPage& page = freshPage();
        QVERIFY(page.openTemplate(shippedDir(), QStringLiteral("zero-shot/generator.mustache")));
        QCOMPARE(page.previewTemplate(), QStringLiteral("zero-shot/generator.mustache"));
        QCOMPARE(page.previewTask(), QStringLiteral("L2/1"));
        const QString text = page.previewText();
        QVERIFY2(text.contains(QLatin1String("## Task L2/1: Conv2d, ReLU, bias add")), qPrintable(text));
        QVERIFY(text.contains(QLatin1String("    x = torch.relu(x)")));
        QVERIFY(text.contains(QStringLiteral("- `x`: float32, shape 128×64×128×128")));
        QVERIFY(text.contains(QLatin1String("`def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:`")));
        QVERIFY(!text.contains(QLatin1String("{{")));
        QVERIFY(page.errorText().isEmpty());
        QVERIFY(page.previewNotes().contains(QLatin1String("No GPU known")));

        // The agent's generator on a later turn: the triager's diagnosis replaces the raw report.
        QVERIFY(page.openTemplate(shippedDir(), QStringLiteral("agent/generator.mustache")));
        QVERIFY(page.previewText().contains(QStringLiteral("aten::conv2d → aten::relu → aten::add")));
        QVERIFY(page.previewText().contains(QLatin1String("[analysis: the analyzer's notes]")));
        QVERIFY(!page.previewText().contains(QLatin1String("[diagnosis:")));
        page.setPreviewTurn(PromptEditorPage::PreviewTurn::Later);
        QVERIFY(page.previewText().contains(QLatin1String("## Diagnosis of your previous answer")));
        QVERIFY(page.previewText().contains(QLatin1String("[diagnosis: the triager's diagnosis]")));
        QVERIFY(page.previewText().contains(QLatin1String("[previous_answer: the previous turn's answer]")));
        QVERIFY(page.previewNotes().contains(QLatin1String("Placeholders in [brackets]")));
    }

    // A regime of the user's own (~/.config/kernel-workbench/regimes, here the test mode's) is one the
    // preview knows: its template renders with that regime's roles (the analyzer's notes stand in),
    // not as a one-role turn of an unknown regime.
    void previewKnowsTheUsersRegimes()
    {
        QStandardPaths::setTestModeEnabled(true);
        const QString dir = userRegimesDir();
        QVERIFY(QDir().mkpath(dir));
        const QString path = dir + QStringLiteral("/tst-prompteditor.toml");
        const std::unique_ptr<const QString, void (*)(const QString*)> removeAtEnd(
            &path, [](const QString* p) { QFile::remove(*p); });
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("[[regime]]\nname = \"tst-prompteditor\"\ndescription = \"The user's own\"\n"
                   "roles = { generator = \"mine/generator.mustache\", analyzer = \"agent/analyzer.mustache\" }\n"
                   "n = 2\nturns = 1\nfeedback = \"none\"\nselection = \"monotone\"\n");
        file.close();
        PromptEditorPage& page = pageWithUserSet(QStringLiteral("agent/generator.mustache"));
        const QString setDir = page.currentSet().dir();
        QVERIFY(QDir(setDir).mkpath(QStringLiteral("mine")));
        QVERIFY(QFile::copy(setDir + QStringLiteral("/agent/generator.mustache"),
                            setDir + QStringLiteral("/mine/generator.mustache")));
        QVERIFY(page.openTemplate(setDir, QStringLiteral("mine/generator.mustache")));
        page.renderPreviewNow();
        QVERIFY2(page.previewText().contains(QLatin1String("[analysis: the analyzer's notes]")),
                 qPrintable(page.previewText()));
        QVERIFY2(!page.previewNotes().contains(QLatin1String("is not a regime")), qPrintable(page.previewNotes()));
        // A folder no regime names is still said to be one.
        QVERIFY(QDir(setDir).mkpath(QStringLiteral("nobody")));
        QVERIFY(QFile::copy(setDir + QStringLiteral("/agent/generator.mustache"),
                            setDir + QStringLiteral("/nobody/generator.mustache")));
        QVERIFY(page.openTemplate(setDir, QStringLiteral("nobody/generator.mustache")));
        page.renderPreviewNow();
        QVERIFY2(page.previewNotes().contains(QStringLiteral("“nobody” is not a regime")),
                 qPrintable(page.previewNotes()));
    }

    void missingDataIsNamed()
    {
        PromptEditorPage& page = freshPage(false);
        QVERIFY(page.openTemplate(shippedDir(), QStringLiteral("profiling-guided/generator.mustache")));
        QVERIFY(page.errorText().isEmpty());
        const QString notes = page.previewNotes();
        QVERIFY2(notes.contains(QLatin1String("No analyze data for L2/1")), qPrintable(notes));
        QVERIFY(notes.contains(QLatin1String("No profile for L2/1")));
        page.clearTaskData();
        page.renderPreviewNow();
        QVERIFY(page.previewNotes().contains(QLatin1String("No task data yet")));
        // Without a task the template still renders (empty values), so its errors still show.
        QVERIFY(page.errorText().isEmpty());
        QVERIFY(page.previewText().contains(QLatin1String("## Task :")));
    }

    void brokenTagShowsTheErrorInline()
    {
        PromptEditorPage& page = freshPage();
        QVERIFY(page.openTemplate(shippedDir(), QStringLiteral("zero-shot/generator.mustache")));
        const QString onDisk = readText(QDir(shippedDir()).filePath(QStringLiteral("zero-shot/generator.mustache")));
        QSignalSpy rendered(&page, &PromptEditorPage::previewRendered);
        CodeEditor* editor = page.editor();
        editor->setFocus();
        cursorToEndOfLine(editor, 3); // line 3 is blank
        QTest::keyClick(editor, Qt::Key_Return);
        QTest::keyClicks(editor, QStringLiteral("{{#x}}"));
        QElapsedTimer sinceTyping;
        sinceTyping.start();
        QVERIFY(page.isModified());
        QVERIFY(page.errorText().isEmpty()); // debounced: nothing rendered yet
        QVERIFY(rendered.wait(2000));
        QVERIFY2(sinceTyping.elapsed() >= 200, "the preview rendered before the debounce delay");
        QCOMPARE(rendered.last().at(0).toBool(), false);
        QCOMPARE(page.errorText(), QStringLiteral("zero-shot/generator.mustache:4: section 'x' is never closed"));
        QCOMPARE(page.errorLine(), 4);
        QCOMPARE(editor->markedLine(), 4);
        QVERIFY(barVisible(page, "errorBar"));
        QVERIFY(page.previewText().contains(QLatin1String("## Task L2/1"))); // the last good preview stays

        // Closed, the section names a variable the context lacks: still line 4, with its name.
        QTest::keyClicks(editor, QStringLiteral("{{/x}}"));
        QTRY_COMPARE(page.errorText(),
                     QStringLiteral("zero-shot/generator.mustache:4: unknown section 'x' (not in the context)"));
        QCOMPARE(page.errorLine(), 4);

        // Removing the line clears the error and the mark.
        QTextCursor c(editor->document()->findBlockByNumber(3));
        c.movePosition(QTextCursor::EndOfBlock, QTextCursor::KeepAnchor);
        c.movePosition(QTextCursor::NextCharacter, QTextCursor::KeepAnchor);
        editor->setTextCursor(c);
        QTest::keyClick(editor, Qt::Key_Delete);
        QTRY_VERIFY(page.errorText().isEmpty());
        QCOMPARE(page.errorLine(), 0);
        QVERIFY(!barVisible(page, "errorBar"));
        // The shipped file was never written.
        QCOMPARE(readText(QDir(shippedDir()).filePath(QStringLiteral("zero-shot/generator.mustache"))), onDisk);
    }

    void shippedEditsSaveAsANewSet()
    {
        PromptEditorPage& page = freshPage();
        QVERIFY(page.openTemplate(shippedDir(), QStringLiteral("zero-shot/generator.mustache")));
        const QString shippedFile = QDir(shippedDir()).filePath(QStringLiteral("zero-shot/generator.mustache"));
        const QString before = readText(shippedFile);
        cursorToEndOfLine(page.editor(), 2);
        QTest::keyClicks(page.editor(), QStringLiteral(" Be brief."));
        QVERIFY(page.isModified());

        QVERIFY(!page.save()); // read-only: the name bar instead
        QVERIFY(barVisible(page, "nameBar"));
        auto* name = page.findChild<QLineEdit*>(QStringLiteral("newSetName"));
        QCOMPARE(name->text(), QStringLiteral("my-prompts"));
        name->setText(QStringLiteral("brief"));
        QSignalSpy created(&page, &PromptEditorPage::setCreated);
        QTest::keyClick(name, Qt::Key_Return);
        QCOMPARE(created.count(), 1);

        const QString setDir = QDir(m_root->path()).filePath(QStringLiteral("brief"));
        QCOMPARE(created.first().at(0).toString(), setDir);
        QCOMPARE(page.currentSet().dir(), setDir);
        QCOMPARE(page.currentTemplate(), QStringLiteral("zero-shot/generator.mustache"));
        QVERIFY(!page.isModified());
        QVERIFY(!page.currentSet().isReadOnly());
        QVERIFY(!barVisible(page, "nameBar"));
        QVERIFY(!barVisible(page, "readOnlyBar"));
        QVERIFY(readText(QDir(setDir).filePath(QStringLiteral("zero-shot/generator.mustache")))
                    .contains(QLatin1String("run faster on an NVIDIA GPU. Be brief.")));
        QCOMPARE(readText(shippedFile), before);
        // The tree lists the new set, the edited template marked as differing from the shipped one.
        QCOMPARE(page.setTree()->topLevelItemCount(), 2);
        QCOMPARE(page.setTree()->topLevelItem(1)->text(0), QStringLiteral("brief"));
        QCOMPARE(page.setTree()->currentItem()->text(0), QStringLiteral("generator.mustache  ●"));

        // A taken name is refused in the bar, without leaving it.
        QString error;
        QVERIFY(!page.saveAsNewSet(QStringLiteral("brief"), &error));
        QVERIFY(error.contains(QLatin1String("already exists")));
    }

    void saveWritesTheFile()
    {
        PromptEditorPage& page = pageWithUserSet(QStringLiteral("agent/triager.mustache"));
        QVERIFY(!page.currentSet().isReadOnly());
        const QString file = page.currentSet().filePath(QStringLiteral("agent/triager.mustache"));
        QSignalSpy saved(&page, &PromptEditorPage::templateSaved);
        page.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&page));
        page.editor()->setFocus();
        page.editor()->moveCursor(QTextCursor::Start);
        QTest::keyClicks(page.editor(), QStringLiteral("Triage carefully. "));
        QVERIFY(page.isModified());
        QTest::keyClick(page.editor(), Qt::Key_S, Qt::ControlModifier);
        QCOMPARE(saved.count(), 1);
        QCOMPARE(saved.first().at(1).toString(), QStringLiteral("agent/triager.mustache"));
        QVERIFY(!page.isModified());
        QCOMPARE(readText(file), page.editor()->toPlainText());
        QVERIFY(readText(file).startsWith(QLatin1String("Triage carefully. {{!")));
    }

    void revertRestoresTheSavedText()
    {
        PromptEditorPage& page = pageWithUserSet(QStringLiteral("partials/device.mustache"));
        const QString file = page.currentSet().filePath(QStringLiteral("partials/device.mustache"));
        const QString saved = readText(file);
        page.editor()->moveCursor(QTextCursor::End);
        QTest::keyClicks(page.editor(), QStringLiteral("{{#broken"));
        QVERIFY(page.editor()->toPlainText() != saved);
        QTRY_VERIFY(!page.errorText().isEmpty());
        page.revert();
        QCOMPARE(page.editor()->toPlainText(), saved);
        QVERIFY(!page.isModified());
        QVERIFY(page.errorText().isEmpty());
        QCOMPARE(readText(file), saved);
    }

    void unsavedChangesAskBeforeSwitching()
    {
        PromptEditorPage& page = pageWithUserSet(QStringLiteral("iterative/generator.mustache"));
        const QString setDir = page.currentSet().dir();
        const QString file = page.currentSet().filePath(QStringLiteral("iterative/generator.mustache"));
        const QString saved = readText(file);
        page.editor()->moveCursor(QTextCursor::Start);
        QTest::keyClicks(page.editor(), QStringLiteral("X"));

        // Through the API: refused, the bar asks.
        QVERIFY(!page.openTemplate(setDir, QStringLiteral("iterative/retry.mustache")));
        QCOMPARE(page.currentTemplate(), QStringLiteral("iterative/generator.mustache"));
        QVERIFY(
            page.pendingSwitchMessage().contains(QLatin1String("iterative/generator.mustache has unsaved changes")));
        QTest::mouseClick(page.findChild<QPushButton*>(QStringLiteral("pendingKeep")), Qt::LeftButton);
        QVERIFY(page.pendingSwitchMessage().isEmpty());
        QVERIFY(page.isModified());

        // Through the tree: the selection snaps back to the edited template.
        QTreeWidgetItem* retry = nullptr;
        for (QTreeWidgetItemIterator it(page.setTree()); *it; ++it)
            if ((*it)->toolTip(0) == QStringLiteral("iterative/retry.mustache") &&
                (*it)->data(0, Qt::UserRole).toString() == setDir)
                retry = *it;
        QVERIFY(retry);
        page.setTree()->setCurrentItem(retry);
        QVERIFY(!page.pendingSwitchMessage().isEmpty());
        QCOMPARE(page.currentTemplate(), QStringLiteral("iterative/generator.mustache"));
        QCOMPARE(page.setTree()->currentItem()->toolTip(0).section(QLatin1Char(':'), 0, 0),
                 QStringLiteral("iterative/generator.mustache"));

        // Discard: switched, the file untouched.
        QTest::mouseClick(page.findChild<QPushButton*>(QStringLiteral("pendingDiscard")), Qt::LeftButton);
        QCOMPARE(page.currentTemplate(), QStringLiteral("iterative/retry.mustache"));
        QVERIFY(!page.isModified());
        QCOMPARE(readText(file), saved);

        // Save and switch: written, then switched.
        QTest::keyClicks(page.editor(), QStringLiteral("Y"));
        QVERIFY(!page.openTemplate(setDir, QStringLiteral("iterative/generator.mustache")));
        QTest::mouseClick(page.findChild<QPushButton*>(QStringLiteral("pendingSave")), Qt::LeftButton);
        QCOMPARE(page.currentTemplate(), QStringLiteral("iterative/generator.mustache"));
        QVERIFY(readText(page.currentSet().filePath(QStringLiteral("iterative/retry.mustache")))
                    .startsWith(QLatin1Char('Y')));
    }

    void partialPreviewsThroughATemplateThatIncludesIt()
    {
        PromptEditorPage& page = pageWithUserSet(QStringLiteral("zero-shot/generator.mustache"));
        QVERIFY(page.openTemplate(page.currentSet().dir(), QStringLiteral("partials/top_ops.mustache")));
        // zero-shot does not include top_ops: the preview moves to one that does.
        QCOMPARE(page.previewTemplate(), QStringLiteral("agent/analyzer.mustache"));
        QVERIFY(page.openTemplate(page.currentSet().dir(), QStringLiteral("partials/task.mustache")));
        QCOMPARE(page.previewTemplate(), QStringLiteral("agent/analyzer.mustache")); // includes task too: kept
        page.editor()->moveCursor(QTextCursor::Start);
        QTest::keyClicks(page.editor(), QStringLiteral("MARKER {{task_id}} "));
        QTRY_VERIFY(page.previewText().contains(QLatin1String("MARKER L2/1 ## Task L2/1")));
        // An error inside the partial is marked in the partial.
        page.editor()->moveCursor(QTextCursor::End);
        QTest::keyClick(page.editor(), Qt::Key_Return);
        QTest::keyClicks(page.editor(), QStringLiteral("{{/params}}"));
        const int line = page.editor()->blockCount();
        QTRY_VERIFY(!page.errorText().isEmpty());
        QCOMPARE(
            page.errorText(),
            QStringLiteral("partials/task.mustache:%1: {{/params}} closes a section that was never opened").arg(line));
        QCOMPARE(page.errorLine(), line);
    }

    // The set shown against what a run actually used (issue 38 item 3): a run made with the set's
    // wording but for one template reads '= run' on the others, '≠ run' on that one, and the
    // summary names it; a template the run did not use is '∅ run'.
    void comparesWithTheSetARunUsed()
    {
        PromptEditorPage& page = freshPage();
        RunConfig config;
        config.promptsDir = shippedDir();
        const TemplateSet set = page.currentSet();
        for (const QString& path : set.templates())
            if (path.startsWith(QLatin1String("zero-shot/")) || path.startsWith(QLatin1String("partials/")))
                config.templates.insert(path.chopped(9), set.load(path).value_or(QString()));
        config.templates[QStringLiteral("zero-shot/generator")] += QStringLiteral("\nAnother sentence.");
        config.regime = StoredRegime::of(*Regime::builtin(QStringLiteral("zero-shot")));
        RunInfo run;
        run.id = 7;
        run.regime = QStringLiteral("zero-shot");
        run.setConfig(config.toJson());
        page.setRuns({run});
        QVERIFY(page.runComparisonText().isEmpty()); // none chosen yet
        QVERIFY(!page.compareWithRun(8));
        QVERIFY(page.compareWithRun(7));
        const QString summary = page.runComparisonText();
        QVERIFY2(summary.startsWith(QStringLiteral("#7 zero-shot used %1 templates").arg(config.templates.size())),
                 qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("1 worded otherwise: zero-shot/generator")), qPrintable(summary));
        QStringList marks;
        for (QTreeWidgetItemIterator it(page.setTree()); *it; ++it)
            marks << (*it)->text(0);
        QVERIFY2(marks.contains(QStringLiteral("generator.mustache  ≠ run")), qPrintable(marks.join(QLatin1Char('|'))));
        QVERIFY2(marks.contains(QStringLiteral("task.mustache  = run")), qPrintable(marks.join(QLatin1Char('|'))));
        QVERIFY2(marks.contains(QStringLiteral("analyzer.mustache  ∅ run")), qPrintable(marks.join(QLatin1Char('|'))));
        QVERIFY(page.compareWithRun(0));
        QVERIFY(page.runComparisonText().isEmpty());
    }

    void diffAgainstShipped()
    {
        PromptEditorPage& page = pageWithUserSet(QStringLiteral("zero-shot/generator.mustache"));
        cursorToEndOfLine(page.editor(), 4);
        QTest::keyClicks(page.editor(), QStringLiteral(" Keep it short."));
        page.showDiffAgainstShipped();
        QVERIFY(page.diffDialog());
        QVERIFY(page.diffDialog()->isVisible());
        QVERIFY(!page.diffDialog()->isModal());
        SideBySideDiffView* diff = page.diffView();
        QCOMPARE(diff->changeCount(), 1);
        QCOMPARE(diff->currentChange(), 0);
        QCOMPARE(diff->diff().hunks[0].leftStart, 3);
        const kwb::textdiff::Row row = diff->diff().rows[diff->diff().hunks[0].firstRow];
        QCOMPARE(row.kind, kwb::textdiff::RowKind::Changed);
        QVERIFY(diff->rightEditor()->toPlainText().contains(QLatin1String("Keep it short.")));
        QVERIFY(!diff->leftEditor()->toPlainText().contains(QLatin1String("Keep it short.")));
        // The change is at the end of a long line: the view scrolled sideways to it.
        QVERIFY(diff->rightEditor()->horizontalScrollBar()->value() > 0);
        const QImage image = page.diffDialog()->grab().toImage();
        QVERIFY(distinctColours(image) > 20);
        QDir().mkpath(QStringLiteral(KWB_SCREENSHOT_DIR));
        QVERIFY(image.save(QDir(QStringLiteral(KWB_SCREENSHOT_DIR)).filePath(QStringLiteral("templatediff.png"))));
    }

    void rendersOffscreen()
    {
        PromptEditorPage& page = freshPage();
        QVERIFY(page.openTemplate(shippedDir(), QStringLiteral("agent/generator.mustache")));
        cursorToEndOfLine(page.editor(), 6);
        QTest::keyClicks(page.editor(), QStringLiteral(" {{#unknown}}"));
        QTRY_VERIFY(!page.errorText().isEmpty());
        const QImage image = page.grab().toImage();
        QCOMPARE(image.size(), QSize(1500, 900) * page.devicePixelRatioF());
        QVERIFY2(distinctColours(image) > 20, "the grab is (nearly) uniform");
        QDir().mkpath(QStringLiteral(KWB_SCREENSHOT_DIR));
        QVERIFY(image.save(QDir(QStringLiteral(KWB_SCREENSHOT_DIR)).filePath(QStringLiteral("prompteditorpage.png"))));
    }
};

QTEST_MAIN(TestPromptEditorPage)
#include "tst_prompteditorpage.moc"
