#include "app/editor/codeeditor.h"

#include <QFontDatabase>
#include <QHelpEvent>
#include <QPainter>
#include <QScrollBar>
#include <QSyntaxHighlighter>
#include <QTextBlock>
#include <QToolTip>

namespace kwb::app {

class CodeEditor::Gutter : public QWidget
{
public:
    explicit Gutter(CodeEditor* editor)
        : QWidget(editor)
        , m_editor(editor)
    {}
    QSize sizeHint() const override { return {m_editor->gutterWidth(), 0}; }

protected:
    void paintEvent(QPaintEvent* event) override { m_editor->paintGutter(event); }
    bool event(QEvent* event) override
    {
        if (event->type() == QEvent::ToolTip) {
            auto* help = static_cast<QHelpEvent*>(event);
            const QTextCursor cursor = m_editor->cursorForPosition(QPoint(0, help->pos().y()));
            if (m_editor->m_markedLine > 0 && cursor.blockNumber() + 1 == m_editor->m_markedLine)
                QToolTip::showText(help->globalPos(), m_editor->m_markedMessage, this);
            else
                QToolTip::hideText();
            return true;
        }
        return QWidget::event(event);
    }

private:
    CodeEditor* m_editor;
};

CodeEditor::CodeEditor(QWidget* parent)
    : QPlainTextEdit(parent)
    , m_gutter(new Gutter(this))
{
    setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    setLineWrapMode(QPlainTextEdit::NoWrap);
    setTabStopDistance(fontMetrics().horizontalAdvance(QLatin1Char(' ')) * 4);
    connect(this, &QPlainTextEdit::blockCountChanged, this, &CodeEditor::updateGutterWidth);
    connect(this, &QPlainTextEdit::updateRequest, this, &CodeEditor::updateGutter);
    connect(this, &QPlainTextEdit::cursorPositionChanged, this, &CodeEditor::updateSelections);
    updateGutterWidth();
    updateSelections();
}

void CodeEditor::setLanguage(Language language)
{
    if (language == m_language && (m_highlighter || language == Language::Plain))
        return;
    delete m_highlighter;
    m_highlighter = nullptr;
    m_language = language;
    m_highlighter = createHighlighter(document(), language);
    if (m_highlighter)
        applyPalette(m_highlighter, palette());
}

void CodeEditor::setLineNumbers(const QVector<int>& numbers)
{
    m_lineNumbers = numbers;
    updateGutterWidth();
    m_gutter->update();
}

void CodeEditor::setHighlightCurrentLine(bool on)
{
    m_highlightCurrentLine = on;
    updateSelections();
}

void CodeEditor::setMarkedLine(int line, const QString& message)
{
    m_markedLine = qMax(0, line);
    m_markedMessage = message;
    updateSelections();
    m_gutter->update();
}

void CodeEditor::setAccentRange(int firstBlock, int count)
{
    m_accentFirst = firstBlock;
    m_accentCount = count;
    m_gutter->update();
}

void CodeEditor::setLayer(Layer layer, const QList<QTextEdit::ExtraSelection>& selections)
{
    m_layers[layer] = selections;
    updateSelections();
}

void CodeEditor::goToLine(int line)
{
    const QTextBlock block = document()->findBlockByNumber(qMax(0, line - 1));
    if (!block.isValid())
        return;
    QTextCursor cursor(block);
    setTextCursor(cursor);
    centerCursor();
}

int CodeEditor::gutterWidth() const
{
    int largest = qMax(1, blockCount());
    for (const int n : m_lineNumbers)
        largest = qMax(largest, n);
    int digits = 1;
    while (largest >= 10) {
        largest /= 10;
        ++digits;
    }
    const int marker = fontMetrics().height() / 2 + 4; // room for the error marker and the accent bar
    return 6 + marker + fontMetrics().horizontalAdvance(QLatin1Char('9')) * qMax(2, digits);
}

void CodeEditor::resizeEvent(QResizeEvent* event)
{
    QPlainTextEdit::resizeEvent(event);
    const QRect cr = contentsRect();
    m_gutter->setGeometry(QRect(cr.left(), cr.top(), gutterWidth(), cr.height()));
}

void CodeEditor::changeEvent(QEvent* event)
{
    QPlainTextEdit::changeEvent(event);
    if (event->type() == QEvent::PaletteChange || event->type() == QEvent::ApplicationPaletteChange) {
        if (m_highlighter)
            applyPalette(m_highlighter, palette());
        updateSelections();
    } else if (event->type() == QEvent::FontChange) {
        setTabStopDistance(fontMetrics().horizontalAdvance(QLatin1Char(' ')) * 4);
        updateGutterWidth();
    }
}

void CodeEditor::updateGutterWidth()
{
    setViewportMargins(gutterWidth(), 0, 0, 0);
    const QRect cr = contentsRect();
    m_gutter->setGeometry(QRect(cr.left(), cr.top(), gutterWidth(), cr.height()));
}

void CodeEditor::updateGutter(const QRect& rect, int dy)
{
    if (dy)
        m_gutter->scroll(0, dy);
    else
        m_gutter->update(0, rect.y(), m_gutter->width(), rect.height());
}

void CodeEditor::updateSelections()
{
    QList<QTextEdit::ExtraSelection> all;
    const bool dark = isDarkPalette(palette());
    if (m_highlightCurrentLine && !isReadOnly()) {
        QTextEdit::ExtraSelection current;
        QColor c = palette().color(QPalette::Highlight);
        c.setAlpha(dark ? 40 : 24);
        current.format.setBackground(c);
        current.format.setProperty(QTextFormat::FullWidthSelection, true);
        current.cursor = textCursor();
        current.cursor.clearSelection();
        all << current;
    }
    for (const auto& layer : m_layers)
        all << layer;
    if (m_markedLine > 0) {
        const QTextBlock block = document()->findBlockByNumber(m_markedLine - 1);
        if (block.isValid()) {
            QTextEdit::ExtraSelection line;
            line.format.setBackground(dark ? QColor(110, 30, 36) : QColor(255, 226, 226));
            line.format.setProperty(QTextFormat::FullWidthSelection, true);
            line.cursor = QTextCursor(block);
            all << line;
            QTextEdit::ExtraSelection wave;
            wave.format.setUnderlineStyle(QTextCharFormat::WaveUnderline);
            wave.format.setUnderlineColor(dark ? QColor(255, 107, 107) : QColor(200, 0, 0));
            wave.cursor = QTextCursor(block);
            wave.cursor.movePosition(QTextCursor::EndOfBlock, QTextCursor::KeepAnchor);
            all << wave;
        }
    }
    setExtraSelections(all);
}

void CodeEditor::paintGutter(QPaintEvent* event)
{
    QPainter painter(m_gutter);
    const bool dark = isDarkPalette(palette());
    painter.fillRect(event->rect(), palette().color(QPalette::Window));
    const int markerWidth = fontMetrics().height() / 2 + 4;
    const int width = m_gutter->width();

    QTextBlock block = firstVisibleBlock();
    int number = block.blockNumber();
    int top = qRound(blockBoundingGeometry(block).translated(contentOffset()).top());
    int bottom = top + qRound(blockBoundingRect(block).height());
    const int current = textCursor().blockNumber();
    while (block.isValid() && top <= event->rect().bottom()) {
        if (block.isVisible() && bottom >= event->rect().top()) {
            const int height = bottom - top;
            if (m_accentFirst >= 0 && number >= m_accentFirst && number < m_accentFirst + m_accentCount)
                painter.fillRect(QRect(0, top, 3, height), palette().color(QPalette::Highlight));
            const int shown = m_lineNumbers.isEmpty() ? number + 1 : m_lineNumbers.value(number, 0);
            if (shown > 0) {
                QColor color = palette().color(QPalette::PlaceholderText);
                if (number == current && !isReadOnly())
                    color = palette().color(QPalette::Text);
                painter.setPen(color);
                painter.drawText(QRect(0, top, width - markerWidth - 2, height), Qt::AlignRight | Qt::AlignVCenter,
                                 QString::number(shown));
            }
            if (m_markedLine > 0 && number + 1 == m_markedLine) {
                const int d = qMin(height, markerWidth) - 4;
                const QRect dot(width - markerWidth + (markerWidth - d) / 2, top + (height - d) / 2, d, d);
                painter.setRenderHint(QPainter::Antialiasing);
                painter.setPen(Qt::NoPen);
                painter.setBrush(dark ? QColor(255, 107, 107) : QColor(200, 0, 0));
                painter.drawEllipse(dot);
                painter.setRenderHint(QPainter::Antialiasing, false);
            }
        }
        block = block.next();
        top = bottom;
        bottom = top + qRound(blockBoundingRect(block).height());
        ++number;
    }
}

} // namespace kwb::app
