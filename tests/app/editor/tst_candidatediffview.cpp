// CandidateDiffView on two fixture candidates for task L2/1: the reference answer
// (reference/L2_01.md) against the plausible wrong one (failing/wrong_result.md). Hand-checked
// with `diff -u` of their blocks: the cuda blocks differ in 2 hunks (the header comment and the
// signature; the kernel body), the python blocks in 1 (the launch set-up): 3 changes. The view
// counts them, steps through them with the API and with F7 / Shift+F7, shows each side's header
// and evaluation, and renders offscreen.

#include "app/editor/candidatediffview.h"
#include "app/editor/codeeditor.h"
#include "app/editor/sidebysidediffview.h"

#include <QDir>
#include <QFile>
#include <QImage>
#include <QJsonDocument>
#include <QLabel>
#include <QPlainTextEdit>
#include <QScrollBar>
#include <QSet>
#include <QSignalSpy>
#include <QTest>

using namespace kwb::app;

namespace {

QString fixture(const QString& relative)
{
    QFile f(QDir(QStringLiteral(KWB_FIXTURES_DIR)).filePath(relative));
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read fixture %s", qPrintable(relative));
    return QString::fromUtf8(f.readAll());
}

QJsonObject json(const char* text)
{
    return QJsonDocument::fromJson(QByteArray(text)).object();
}

// Quotes inside the JSON strings are written \u0022: moc 6.4 misreads \" in a raw string literal
// and then finds no test class.
// Evaluations shaped as docs/protocol.md §evaluate gives them.
const char* kCorrect = R"({"status":"correct","stage":"done","message":"","format_error":null,
 "compile":{"ok":true,"log":"","ms":35.2,"arch":"sm_90","kernels":["relu_bias_add"]},
 "correctness":{"trials":5,"passed":5,"max_abs_diff":1.2e-6,"max_rel_diff":3e-7,"atol":1e-4,"rtol":1e-4,"deterministic":true,"failure":null},
 "timing":{"candidate":{"mean_ms":8.52},"reference":{"mean_ms":9.12}},"speedup":1.0704})";

const char* kIncorrect = R"({"status":"incorrect","stage":"correctness","message":"trial 1: values differ",
 "compile":{"ok":true,"log":"","arch":"sm_90"},
 "correctness":{"trials":5,"passed":0,"max_abs_diff":0.53,"max_rel_diff":1.0,"atol":1e-4,"rtol":1e-4,
   "failure":{"trial":0,"reason":"values differ","detail":{"index":[0,1,0,0],"expected":0.12,"got":0.65}}}})";

const char* kCompileError = R"({"status":"compile_error","stage":"compile","message":"NVRTC failed: 1 error",
 "compile":{"ok":false,"log":"candidate.cu(8): error: no operator \u0022*\u0022 matches these operands","arch":"sm_90"}})";

/// Distinct colours in the image: a blank or single-colour grab has one or two.
int distinctColours(const QImage& image)
{
    QSet<QRgb> colours;
    for (int y = 0; y < image.height(); y += 2)
        for (int x = 0; x < image.width(); x += 2)
            colours.insert(image.pixel(x, y));
    return int(colours.size());
}

} // namespace

class TestCandidateDiffView : public QObject
{
    Q_OBJECT

    CandidateSide m_reference;
    CandidateSide m_wrong;

private Q_SLOTS:
    void initTestCase()
    {
        m_reference =
            CandidateSide::fromAnswer(QStringLiteral("L2/1 · run 3 · agent · turn 1 · sample 2"),
                                      fixture(QStringLiteral("candidates/reference/L2_01.md")), json(kCorrect));
        m_wrong =
            CandidateSide::fromAnswer(QStringLiteral("L2/1 · run 3 · agent · turn 1 · sample 3"),
                                      fixture(QStringLiteral("candidates/failing/wrong_result.md")), json(kIncorrect));
    }

    void answersSplitIntoBlocks()
    {
        QVERIFY(m_reference.cuda.startsWith(QLatin1String("// y[n,c,h,w] = max(y, 0) + bias[c]")));
        QVERIFY(m_reference.cuda.endsWith(QLatin1String("\n}")));
        QCOMPARE(m_reference.cuda.count(QLatin1Char('\n')) + 1, 26);
        QVERIFY(
            m_reference.python.startsWith(QLatin1String("def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:")));
        QCOMPARE(m_wrong.python.count(QLatin1Char('\n')) + 1, 6);
        QCOMPARE(m_reference.status, QStringLiteral("correct"));
        QVERIFY(m_reference.speedup.has_value());
        QCOMPARE(*m_reference.speedup, 1.0704);
        QCOMPARE(m_wrong.status, QStringLiteral("incorrect"));
        QVERIFY(!m_wrong.speedup.has_value());
        // A block wrapped in ````markdown counts; a missing block is empty.
        QCOMPARE(fencedBlock(QStringLiteral("````markdown\n```python\nx = 1\n```\n````\n"), QStringLiteral("python")),
                 QStringLiteral("x = 1"));
        QCOMPARE(fencedBlock(fixture(QStringLiteral("candidates/failing/no_code_block.md")), QStringLiteral("cuda")),
                 QString());
    }

    void emptyStateBeforeCandidates()
    {
        CandidateDiffView view;
        QVERIFY(!view.hasCandidates());
        QCOMPARE(view.changeCount(), 0);
        QCOMPARE(view.changeSummary(), QString());
        auto* empty = view.findChild<QLabel*>(QStringLiteral("emptyState"));
        QVERIFY(empty);
        view.resize(900, 600);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QVERIFY(empty->isVisible());
        QVERIFY(empty->text().contains(QLatin1String("No candidates to compare")));
    }

    void countsTheFixturesChanges()
    {
        CandidateDiffView view;
        view.setCandidates(m_reference, m_wrong);
        QVERIFY(view.hasCandidates());
        QCOMPARE(view.cudaDiff()->changeCount(), 2);
        QCOMPARE(view.pythonDiff()->changeCount(), 1);
        QCOMPARE(view.changeCount(), 3);
        QCOMPARE(view.changeSummary(), QStringLiteral("changes: 3"));

        // Both sides have one row per aligned line: 26 reference lines, and the body's 20 lines
        // against 4 leave fillers on the right.
        const auto& cuda = view.cudaDiff()->diff();
        QCOMPARE(view.cudaDiff()->leftEditor()->blockCount(), int(cuda.rows.size()));
        QCOMPARE(view.cudaDiff()->rightEditor()->blockCount(), int(cuda.rows.size()));
        QCOMPARE(cuda.leftLineCount, 26);
        QCOMPARE(cuda.rightLineCount, 8);
        // The signature gained `long long n`: it pairs with its new version after the two
        // deleted comment lines.
        QCOMPARE(cuda.hunks[0].leftCount, 3);
        QCOMPARE(cuda.hunks[0].rightCount, 1);
        const kwb::textdiff::Row signature = cuda.rows[2];
        QCOMPARE(signature.kind, kwb::textdiff::RowKind::Changed);
        QCOMPARE(signature.leftLine, 2);
        QCOMPARE(signature.rightLine, 0);
        QCOMPARE(cuda.hunks[1].leftStart, 4);
        QCOMPARE(cuda.hunks[1].leftCount, 20);
        QCOMPARE(cuda.hunks[1].rightStart, 2);
        QCOMPARE(cuda.hunks[1].rightCount, 4);
        const auto& python = view.pythonDiff()->diff();
        QCOMPARE(python.hunks[0].leftStart, 2);
        QCOMPARE(python.hunks[0].leftCount, 5);
        QCOMPARE(python.hunks[0].rightCount, 3);

        // Filler rows have no line number: the right gutter numbers stop at 8.
        QVERIFY(view.cudaDiff()->rightEditor()->toPlainText().contains(QLatin1String("bias[i % C]")));
        QCOMPARE(view.cudaDiff()->leftEditor()->toPlainText().count(QLatin1Char('\n')) + 1, int(cuda.rows.size()));
    }

    void identicalCandidatesHaveNoChanges()
    {
        CandidateDiffView view;
        view.setCandidates(m_reference, m_reference);
        QCOMPARE(view.changeCount(), 0);
        QCOMPARE(view.changeSummary(), QStringLiteral("changes: 0"));
        QCOMPARE(view.currentChange(), -1);
        QVERIFY(!view.nextChange());
    }

    void navigationMoves()
    {
        CandidateDiffView view;
        view.resize(1200, 800);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        QSignalSpy moved(&view, &CandidateDiffView::currentChangeChanged);
        view.setCandidates(m_reference, m_wrong);
        QCOMPARE(view.currentChange(), 0); // the first change is marked at once
        QCOMPARE(view.cudaDiff()->currentChange(), 0);
        QCOMPARE(view.pythonDiff()->currentChange(), -1);
        QCOMPARE(view.cudaDiff()->leftEditor()->textCursor().blockNumber(), view.cudaDiff()->diff().hunks[0].firstRow);

        QVERIFY(view.nextChange());
        QCOMPARE(view.currentChange(), 1);
        const int bodyRow = view.cudaDiff()->diff().hunks[1].firstRow;
        QCOMPARE(view.cudaDiff()->leftEditor()->textCursor().blockNumber(), bodyRow);
        // The right side's cursor sits on the first changed tokens of the change.
        const int rightRow = view.cudaDiff()->rightEditor()->textCursor().blockNumber();
        QVERIFY(rightRow >= bodyRow && rightRow < bodyRow + view.cudaDiff()->diff().hunks[1].rowCount);
        QVERIFY(view.cudaDiff()->firstVisibleRow() <= bodyRow);
        // Scrolling is locked: both sides show the same first row.
        QCOMPARE(view.cudaDiff()->leftEditor()->verticalScrollBar()->value(),
                 view.cudaDiff()->rightEditor()->verticalScrollBar()->value());

        QVERIFY(view.nextChange());
        QCOMPARE(view.currentChange(), 2);
        QCOMPARE(view.cudaDiff()->currentChange(), -1);
        QCOMPARE(view.pythonDiff()->currentChange(), 0);
        QVERIFY(!view.nextChange()); // the last one
        QCOMPARE(view.currentChange(), 2);

        QVERIFY(view.previousChange());
        QCOMPARE(view.currentChange(), 1);
        QVERIFY(moved.count() >= 4);
        QCOMPARE(moved.last().at(0).toInt(), 1);
        QCOMPARE(moved.last().at(1).toInt(), 3);

        // The keyboard: F7 forward, Shift+F7 back, Alt+Up back.
        view.activateWindow();
        QVERIFY(QTest::qWaitForWindowActive(&view));
        view.cudaDiff()->leftEditor()->setFocus();
        QTest::keyClick(view.cudaDiff()->leftEditor(), Qt::Key_F7);
        QCOMPARE(view.currentChange(), 2);
        QTest::keyClick(view.cudaDiff()->leftEditor(), Qt::Key_F7, Qt::ShiftModifier);
        QCOMPARE(view.currentChange(), 1);
        QTest::keyClick(view.cudaDiff()->leftEditor(), Qt::Key_Up, Qt::AltModifier);
        QCOMPARE(view.currentChange(), 0);
        QTest::keyClick(view.cudaDiff()->leftEditor(), Qt::Key_Down, Qt::AltModifier);
        QCOMPARE(view.currentChange(), 1);
    }

    void headersAndLogsShowTheEvaluation()
    {
        CandidateDiffView view;
        const CandidateSide failing = CandidateSide::fromAnswer(
            QStringLiteral("L1/5 · compile error"), fixture(QStringLiteral("candidates/failing/compile_error.md")),
            json(kCompileError));
        view.setCandidates(m_wrong, failing);
        QStringList labels;
        for (QLabel* l : view.findChildren<QLabel*>())
            labels << l->text();
        QVERIFY(labels.contains(QStringLiteral("L2/1 · run 3 · agent · turn 1 · sample 3")));
        QVERIFY(labels.contains(QStringLiteral("incorrect")));
        QVERIFY(labels.contains(QStringLiteral("compile_error")));
        QVERIFY(labels.contains(QStringLiteral("no timing")));

        const QString left = view.leftLog()->toPlainText();
        QVERIFY2(left.contains(QLatin1String("status: incorrect (stopped at: correctness)")), qPrintable(left));
        QVERIFY(left.contains(QLatin1String("passed 0 of 5 trials; max abs diff 0.53 (atol 0.0001)")));
        QVERIFY(left.contains(QLatin1String("failure (trial 1): values differ")));
        QVERIFY(left.contains(QLatin1String("\"expected\":0.12")));
        const QString right = view.rightLog()->toPlainText();
        QVERIFY(right.contains(QLatin1String("compile log (NVRTC, sm_90):")));
        QVERIFY(right.contains(QLatin1String("candidate.cu(8): error: no operator \"*\" matches these operands")));

        view.setCandidates(m_reference, m_wrong);
        QVERIFY(view.leftLog()->toPlainText().contains(QStringLiteral("speedup: 1.07×")));
        labels.clear();
        for (QLabel* l : view.findChildren<QLabel*>())
            labels << l->text();
        QVERIFY(labels.contains(QStringLiteral("1.07× vs eager")));
        QVERIFY(CandidateSide::evaluationReport({}).startsWith(QLatin1String("Not evaluated")));
    }

    void torchOnlyCandidateHidesTheCudaDiff()
    {
        CandidateDiffView view;
        CandidateSide a = m_reference, b = m_wrong;
        a.cuda.clear();
        b.cuda.clear();
        view.resize(900, 600);
        view.show();
        view.setCandidates(a, b);
        QVERIFY(!view.cudaDiff()->isVisible());
        QCOMPARE(view.changeCount(), 1);
        QCOMPARE(view.currentChange(), 0);
        QCOMPARE(view.pythonDiff()->currentChange(), 0);
    }

    void rendersOffscreen()
    {
        CandidateDiffView view;
        view.setCandidates(m_reference, m_wrong);
        view.resize(1400, 900);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        view.nextChange();
        const QImage image = view.grab().toImage();
        QCOMPARE(image.size(), QSize(1400, 900) * view.devicePixelRatioF());
        QVERIFY2(distinctColours(image) > 20, "the grab is (nearly) uniform");
        QDir().mkpath(QStringLiteral(KWB_SCREENSHOT_DIR));
        QVERIFY(image.save(QDir(QStringLiteral(KWB_SCREENSHOT_DIR)).filePath(QStringLiteral("candidatediffview.png"))));
    }
};

QTEST_MAIN(TestCandidateDiffView)
#include "tst_candidatediffview.moc"
