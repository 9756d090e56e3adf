// CandidateDiffView on two fixture candidates for task L2/1: the reference answer
// (reference/L2_01.md) against the plausible wrong one (failing/wrong_result.md), each with its
// recorded H200 evaluation (tests/protocol/recorded: those are the requests' answers), whose
// `candidate` echo holds the blocks the worker parsed. Hand-checked with `diff -u` of their
// blocks: the cuda blocks differ in 2 hunks (the header comment and the signature; the kernel
// body), the python blocks in 1 (the launch set-up): 3 changes. The view counts them, steps
// through them with the API and with F7 / Shift+F7, shows each side's header and evaluation,
// says where the blocks come from, compares whole answers where no echo exists, and renders
// offscreen.

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

using namespace kwb;
using namespace kwb::app;

namespace {

QByteArray readFile(const QString& path)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        qFatal("cannot read %s", qPrintable(path));
    return f.readAll();
}

QString fixture(const QString& relative)
{
    return QString::fromUtf8(readFile(QDir(QStringLiteral(KWB_FIXTURES_DIR)).filePath(relative)));
}

/// A recorded worker response (tests/protocol/recorded/NAME.response.json), decoded.
EvaluationResult recorded(const QString& name)
{
    const QString path = QDir(QStringLiteral(KWB_FIXTURES_DIR "/../protocol/recorded"))
                             .filePath(name + QStringLiteral(".response.json"));
    return decodeEvaluation(QJsonDocument::fromJson(readFile(path)).object());
}

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
        m_reference = CandidateSide::make(QStringLiteral("L2/1 · run 3 · agent · turn 1 · sample 2"),
                                          fixture(QStringLiteral("candidates/reference/L2_01.md")),
                                          recorded(QStringLiteral("evaluate_correct.h200")));
        m_wrong = CandidateSide::make(QStringLiteral("L2/1 · run 3 · agent · turn 1 · sample 3"),
                                      fixture(QStringLiteral("candidates/failing/wrong_result.md")),
                                      recorded(QStringLiteral("evaluate_incorrect.h200")));
    }

    void sidesTakeTheWorkersBlocks()
    {
        // The blocks are the evaluation's echo, as the worker parsed them (with their last newline).
        QVERIFY(m_reference.blocks);
        QCOMPARE(m_reference.blocks->cuda, m_reference.evaluation->candidate->cuda);
        QVERIFY(m_reference.blocks->cuda.startsWith(QLatin1String("// y[n,c,h,w] = max(y, 0) + bias[c]")));
        QVERIFY(m_reference.blocks->cuda.endsWith(QLatin1String("\n}\n")));
        QCOMPARE(m_reference.blocks->cuda.count(QLatin1Char('\n')), 26);
        QVERIFY(m_reference.blocks->python.startsWith(
            QLatin1String("def forward(x: Tensor, p: Dict[str, Tensor]) -> Tensor:")));
        QCOMPARE(m_wrong.blocks->python.count(QLatin1Char('\n')), 6);
        QCOMPARE(m_reference.evaluation->status, EvaluationStatus::Correct);
        QVERIFY(m_reference.evaluation->speedup.has_value());
        QCOMPARE(m_wrong.evaluation->status, EvaluationStatus::Incorrect);
        QVERIFY(!m_wrong.evaluation->speedup.has_value());
        // Without an echo in the evaluation the store's copy of one serves; without either, none.
        const CandidateEcho stored{QStringLiteral("__global__ void s() {}\n"), QString(), {}, QString(), 3, 0};
        const CandidateSide timedOut = CandidateSide::make(
            QStringLiteral("t"), QStringLiteral("```cuda\nx\n```\n"),
            decodeEvaluation(failureResult(QStringLiteral("timeout"), QStringLiteral("240 s"))), stored);
        QCOMPARE(timedOut.blocks->cuda, stored.cuda);
        QVERIFY(!CandidateSide::make(QStringLiteral("n"), QStringLiteral("```cuda\nx\n```\n"), std::nullopt).blocks);
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
        QVERIFY(!view.showsAnswers());
        QVERIFY2(view.sourceNote().contains(QLatin1String("as the worker parsed them")), qPrintable(view.sourceNote()));
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
        const CandidateSide failing = CandidateSide::make(
            QStringLiteral("L1/5 · compile error"), fixture(QStringLiteral("candidates/failing/compile_error.md")),
            recorded(QStringLiteral("evaluate_compile_error.h200")));
        view.setCandidates(m_wrong, failing);
        QStringList labels;
        for (QLabel* l : view.findChildren<QLabel*>())
            labels << l->text();
        QVERIFY(labels.contains(QStringLiteral("L2/1 · run 3 · agent · turn 1 · sample 3")));
        // The status table's labels.
        QVERIFY(labels.contains(QStringLiteral("incorrect")));
        QVERIFY(labels.contains(QStringLiteral("compile error")));
        QVERIFY(labels.contains(QStringLiteral("no timing")));

        const QString left = view.leftLog()->toPlainText();
        QVERIFY2(left.contains(QLatin1String("status: incorrect (stopped at: correctness)")), qPrintable(left));
        QVERIFY(left.contains(QLatin1String("passed 0 of 5 trials; max abs diff 3.923 (atol 0.0001)")));
        QVERIFY(left.contains(QLatin1String("failure (trial 1): 258080256 of 260112384 elements differ")));
        QVERIFY(left.contains(QLatin1String("\"expected\":-0.2030501365661621")));
        const QString right = view.rightLog()->toPlainText();
        QVERIFY2(right.contains(QLatin1String("status: compile error (stopped at: compile)")), qPrintable(right));
        QVERIFY(right.contains(QLatin1String("compile log (NVRTC, sm_90):")));
        QVERIFY(right.contains(QLatin1String("candidate.cu(7): error: no operator \"*\" matches these operands")));

        view.setCandidates(m_reference, m_wrong);
        // The speed-up with its 95 % interval (the recorded H200 answer's timing.speedup_interval).
        QVERIFY(view.leftLog()->toPlainText().contains(QStringLiteral("speedup: 1.071× [1.070–1.072]")));
        labels.clear();
        for (QLabel* l : view.findChildren<QLabel*>())
            labels << l->text();
        QVERIFY(labels.contains(QStringLiteral("1.071× [1.070–1.072] vs eager")));
        QVERIFY(CandidateSide::evaluationReport(std::nullopt).startsWith(QLatin1String("Not evaluated")));
        // The worker's notes, each on its own line.
        EvaluationResult noted = decodeEvaluation(failureResult(QStringLiteral("correct"), QString()));
        noted.notes = {
            EvaluationNote{QStringLiteral("unused_import"), QStringLiteral("never uses 'os' (answer line 6)"), 6}};
        QVERIFY(CandidateSide::evaluationReport(noted).contains(
            QStringLiteral("note (unused_import): never uses 'os' (answer line 6)")));
    }

    void withoutAnEchoTheAnswersAreCompared()
    {
        // The right side timed out: the worker never answered, so no parse of its answer exists.
        // The view compares the whole answers and says why; it does not parse them itself.
        CandidateDiffView view;
        const CandidateSide timedOut = CandidateSide::make(
            QStringLiteral("L2/1 · timeout"), fixture(QStringLiteral("candidates/failing/wrong_result.md")),
            decodeEvaluation(failureResult(QStringLiteral("timeout"), QStringLiteral("240 s"))));
        QVERIFY(!timedOut.blocks);
        view.setCandidates(m_reference, timedOut);
        QVERIFY(view.showsAnswers());
        const QString note = view.sourceNote();
        QVERIFY2(note.contains(QLatin1String("No parse by the worker is stored for the right candidate")),
                 qPrintable(note));
        QVERIFY(note.contains(QLatin1String("whole answers are compared")));
        QVERIFY(note.contains(QLatin1String("timeout")));
        // The first diff holds the answers, Markdown and all; the python diff is empty.
        QVERIFY(m_reference.answer.endsWith(QLatin1Char('\n')));
        QCOMPARE(view.cudaDiff()->diff().leftLineCount, int(m_reference.answer.count(QLatin1Char('\n'))));
        QVERIFY(view.cudaDiff()->leftEditor()->toPlainText().contains(QLatin1String("```cuda")));
        QCOMPARE(view.pythonDiff()->changeCount(), 0);
        QVERIFY(view.changeCount() > 0);
        QVERIFY(view.rightLog()->toPlainText().contains(QLatin1String("status: timeout")));

        // Neither evaluated: both named.
        view.setCandidates(CandidateSide::make(QStringLiteral("a"), QStringLiteral("one\n"), std::nullopt),
                           CandidateSide::make(QStringLiteral("b"), QStringLiteral("two\n"), std::nullopt));
        QVERIFY(view.sourceNote().contains(QLatin1String("either candidate")));
        QVERIFY(view.sourceNote().contains(QLatin1String("left: not evaluated; right: not evaluated")));

        // Back to blocks once both have an echo.
        view.setCandidates(m_reference, m_wrong);
        QVERIFY(!view.showsAnswers());
    }

    void torchOnlyCandidateHidesTheCudaDiff()
    {
        CandidateDiffView view;
        CandidateSide a = m_reference, b = m_wrong;
        a.blocks->cuda.clear();
        b.blocks->cuda.clear();
        view.resize(900, 600);
        view.show();
        view.setCandidates(a, b);
        QVERIFY(!view.cudaDiff()->isVisible());
        QCOMPARE(view.changeCount(), 1);
        QCOMPARE(view.currentChange(), 0);
        QCOMPARE(view.pythonDiff()->currentChange(), 0);
    }

    // Seen in the real-text example (session 28): a KernelBench-format answer's CUDA is inside its
    // module, so having no CUDA block does not make it torch-only, and load_inline built it, not NVRTC.
    void kernelBenchFormatIsNotTorchOnly()
    {
        CandidateDiffView view;
        CandidateSide a = m_reference, b = m_wrong;
        a.blocks->cuda.clear();
        b.blocks->cuda.clear();
        QJsonObject raw = failureResult(QStringLiteral("compile_error"), QStringLiteral("Error building extension"));
        raw.insert(QStringLiteral("answer_format"), QStringLiteral("kernelbench"));
        raw.insert(QStringLiteral("compile"),
                   QJsonObject{{QStringLiteral("ok"), false},
                               {QStringLiteral("arch"), QStringLiteral("sm_90")},
                               {QStringLiteral("log"), QStringLiteral("cuda.cu(167): error: expression must be a "
                                                                      "modifiable lvalue")}});
        b.evaluation = decodeEvaluation(raw);
        QVERIFY(b.evaluation->isKernelBenchFormat());
        QVERIFY(!a.evaluation->isKernelBenchFormat());
        view.setCandidates(a, b);
        QStringList labels;
        for (QLabel* l : view.findChildren<QLabel*>())
            labels << l->text();
        const QString all = labels.join(QLatin1Char('\n'));
        QVERIFY2(all.contains(QStringLiteral("CUDA block: neither candidate has one (KernelBench's format: the CUDA "
                                             "is in the module, below)")),
                 qPrintable(all));
        QVERIFY(!all.contains(QStringLiteral("(torch-only candidates)")));
        QVERIFY(all.contains(QStringLiteral("Module (KernelBench's format, load_inline)")));
        QVERIFY(!all.contains(QStringLiteral("TorchScript")));
        const QString right = view.rightLog()->toPlainText();
        QVERIFY2(right.contains(QStringLiteral("compile log (load_inline, sm_90):")), qPrintable(right));
        QVERIFY(!right.contains(QStringLiteral("NVRTC")));

        // Two native answers keep the native words.
        b = m_wrong;
        b.blocks->cuda.clear();
        view.setCandidates(a, b);
        labels.clear();
        for (QLabel* l : view.findChildren<QLabel*>())
            labels << l->text();
        QVERIFY(labels.join(QLatin1Char('\n')).contains(QStringLiteral("(torch-only candidates)")));
        QVERIFY(labels.join(QLatin1Char('\n')).contains(QStringLiteral("Python block (TorchScript)")));
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
