#include "app/editor/sidebysidediffview.h"

#include "app/editor/codeeditor.h"

#include <QEvent>
#include <QHBoxLayout>
#include <QScrollBar>
#include <QTextBlock>

namespace kwb::app {

namespace {

struct DiffColours
{
    QColor deleted, deletedStrong, inserted, insertedStrong, filler;
};

DiffColours coloursFor(bool dark)
{
    if (dark)
        return {QColor(0x4b, 0x1f, 0x24), QColor(0x8a, 0x33, 0x3d), QColor(0x1d, 0x44, 0x2a), QColor(0x2e, 0x7a, 0x46),
                QColor(255, 255, 255, 40)};
    return {QColor(0xff, 0xeb, 0xe9), QColor(0xff, 0xb3, 0xad), QColor(0xe6, 0xff, 0xec), QColor(0xab, 0xf2, 0xbc),
            QColor(0, 0, 0, 40)};
}

QTextEdit::ExtraSelection lineSelection(QTextDocument* doc, int block, const QBrush& brush)
{
    QTextEdit::ExtraSelection s;
    s.cursor = QTextCursor(doc->findBlockByNumber(block));
    s.format.setBackground(brush);
    s.format.setProperty(QTextFormat::FullWidthSelection, true);
    return s;
}

QTextEdit::ExtraSelection rangeSelection(QTextDocument* doc, int block, const textdiff::Range& range,
                                         const QColor& color)
{
    QTextEdit::ExtraSelection s;
    const QTextBlock b = doc->findBlockByNumber(block);
    s.cursor = QTextCursor(doc);
    s.cursor.setPosition(b.position() + range.start);
    s.cursor.setPosition(b.position() + range.start + range.length, QTextCursor::KeepAnchor);
    s.format.setBackground(color);
    return s;
}

CodeEditor* makeSide(QWidget* parent)
{
    auto* editor = new CodeEditor(parent);
    editor->setReadOnly(true);
    editor->setHighlightCurrentLine(false);
    editor->setTextInteractionFlags(Qt::TextSelectableByMouse | Qt::TextSelectableByKeyboard);
    return editor;
}

} // namespace

SideBySideDiffView::SideBySideDiffView(QWidget* parent)
    : QWidget(parent)
{
    m_left = makeSide(this);
    m_right = makeSide(this);
    m_left->setObjectName(QStringLiteral("diffLeft"));
    m_right->setObjectName(QStringLiteral("diffRight"));
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(4);
    layout->addWidget(m_left, 1);
    layout->addWidget(m_right, 1);

    // Both sides have the same rows, so the same scroll value shows the same rows. The guard
    // keeps a side whose range is shorter (horizontally) from clamping the other one back.
    auto lock = [this](QScrollBar* a, QScrollBar* b) {
        auto follow = [this](QScrollBar* to, int v) {
            if (m_syncingScroll)
                return;
            m_syncingScroll = true;
            to->setValue(v);
            m_syncingScroll = false;
        };
        connect(a, &QScrollBar::valueChanged, b, [b, follow](int v) { follow(b, v); });
        connect(b, &QScrollBar::valueChanged, a, [a, follow](int v) { follow(a, v); });
    };
    lock(m_left->verticalScrollBar(), m_right->verticalScrollBar());
    lock(m_left->horizontalScrollBar(), m_right->horizontalScrollBar());
}

void SideBySideDiffView::setTexts(const QString& left, const QString& right, Language language)
{
    const QStringList leftLines = textdiff::splitLines(left);
    const QStringList rightLines = textdiff::splitLines(right);
    m_diff = textdiff::diffLines(leftLines, rightLines);

    QStringList leftRows, rightRows;
    QVector<int> leftNumbers, rightNumbers;
    for (const textdiff::Row& row : m_diff.rows) {
        leftRows << (row.leftLine >= 0 ? leftLines.at(row.leftLine) : QString());
        rightRows << (row.rightLine >= 0 ? rightLines.at(row.rightLine) : QString());
        leftNumbers << row.leftLine + 1; // a filler's -1 becomes 0: no number
        rightNumbers << row.rightLine + 1;
    }
    m_left->setLanguage(language);
    m_right->setLanguage(language);
    m_left->setPlainText(leftRows.join(QLatin1Char('\n')));
    m_right->setPlainText(rightRows.join(QLatin1Char('\n')));
    m_left->setLineNumbers(leftNumbers);
    m_right->setLineNumbers(rightNumbers);
    m_current = -1;
    m_left->setAccentRange(-1, 0);
    m_right->setAccentRange(-1, 0);
    applyColours();
    Q_EMIT currentChangeChanged(m_current);
}

void SideBySideDiffView::clear()
{
    setTexts(QString(), QString(), Language::Plain);
}

bool SideBySideDiffView::setCurrentChange(int index)
{
    if (index < -1 || index >= changeCount())
        return false;
    m_current = index;
    if (index < 0) {
        m_left->setAccentRange(-1, 0);
        m_right->setAccentRange(-1, 0);
    } else {
        const textdiff::Hunk& hunk = m_diff.hunks.at(index);
        m_left->setAccentRange(hunk.firstRow, hunk.rowCount);
        m_right->setAccentRange(hunk.firstRow, hunk.rowCount);
        m_right->goToLine(hunk.firstRow + 1);
        m_left->goToLine(hunk.firstRow + 1);
        // Long lines do not wrap (rows must stay aligned): bring the first changed tokens into
        // view, their end first so that a range that fits is wholly visible.
        for (int r = hunk.firstRow; r < hunk.firstRow + hunk.rowCount; ++r) {
            const textdiff::Row& row = m_diff.rows.at(r);
            const bool right = !row.rightChanges.isEmpty();
            if (row.kind != textdiff::RowKind::Changed || (!right && row.leftChanges.isEmpty()))
                continue;
            CodeEditor* editor = right ? m_right : m_left;
            const textdiff::Range range = right ? row.rightChanges.first() : row.leftChanges.first();
            const int start = editor->document()->findBlockByNumber(r).position() + range.start;
            QTextCursor cursor = editor->textCursor();
            cursor.setPosition(start + range.length);
            editor->setTextCursor(cursor);
            editor->ensureCursorVisible();
            cursor.setPosition(start);
            editor->setTextCursor(cursor);
            editor->ensureCursorVisible();
            break;
        }
    }
    Q_EMIT currentChangeChanged(m_current);
    return true;
}

int SideBySideDiffView::firstVisibleRow() const
{
    return m_left->cursorForPosition(QPoint(0, 0)).blockNumber();
}

void SideBySideDiffView::changeEvent(QEvent* event)
{
    QWidget::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::ApplicationPaletteChange)
        applyColours();
}

void SideBySideDiffView::applyColours()
{
    const DiffColours c = coloursFor(isDarkPalette(palette()));
    const QBrush filler(c.filler, Qt::BDiagPattern);
    QList<QTextEdit::ExtraSelection> leftLines, rightLines, leftTokens, rightTokens;
    QTextDocument* ld = m_left->document();
    QTextDocument* rd = m_right->document();
    for (int i = 0; i < m_diff.rows.size(); ++i) {
        const textdiff::Row& row = m_diff.rows.at(i);
        switch (row.kind) {
        case textdiff::RowKind::Equal: break;
        case textdiff::RowKind::Deleted:
            leftLines << lineSelection(ld, i, c.deleted);
            rightLines << lineSelection(rd, i, filler);
            break;
        case textdiff::RowKind::Inserted:
            leftLines << lineSelection(ld, i, filler);
            rightLines << lineSelection(rd, i, c.inserted);
            break;
        case textdiff::RowKind::Changed:
            leftLines << lineSelection(ld, i, c.deleted);
            rightLines << lineSelection(rd, i, c.inserted);
            for (const textdiff::Range& r : row.leftChanges)
                leftTokens << rangeSelection(ld, i, r, c.deletedStrong);
            for (const textdiff::Range& r : row.rightChanges)
                rightTokens << rangeSelection(rd, i, r, c.insertedStrong);
            break;
        }
    }
    m_left->setLayer(CodeEditor::DiffLines, leftLines);
    m_right->setLayer(CodeEditor::DiffLines, rightLines);
    m_left->setLayer(CodeEditor::DiffEmphasis, leftTokens);
    m_right->setLayer(CodeEditor::DiffEmphasis, rightTokens);
}

} // namespace kwb::app
