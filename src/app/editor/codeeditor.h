#pragma once
// A plain-text code view: a gutter with line numbers (or any numbering: the side-by-side diff shows
// the file's own line numbers and none on filler rows), the current line highlighted, syntax
// colours from createHighlighter(), one marked line (a template error) and layers of background
// selections that other views set (diff colours).

#include "app/editor/syntaxhighlighting.h"

#include <QPlainTextEdit>
#include <QVector>

class QSyntaxHighlighter;

namespace kwb::app {

class CodeEditor : public QPlainTextEdit
{
    Q_OBJECT
public:
    /// Background layers, painted in this order below the marked line.
    enum Layer { DiffLines, DiffEmphasis, LayerCount };

    explicit CodeEditor(QWidget* parent = nullptr);

    void setLanguage(Language language);
    Language language() const { return m_language; }
    QSyntaxHighlighter* highlighter() const { return m_highlighter; }

    /// The number shown beside each block (1-based; 0 shows nothing). Empty: blocks count from 1.
    void setLineNumbers(const QVector<int>& numbers);
    void setHighlightCurrentLine(bool on);

    /// Marks a line (1-based block number) in the gutter and underlines it; the message is its tooltip.
    void setMarkedLine(int line, const QString& message);
    void clearMarkedLine() { setMarkedLine(0, QString()); }
    int markedLine() const { return m_markedLine; }
    QString markedLineMessage() const { return m_markedMessage; }

    /// Blocks [first, first + count) get an accent bar in the gutter (the diff's current change).
    void setAccentRange(int firstBlock, int count);

    void setLayer(Layer layer, const QList<QTextEdit::ExtraSelection>& selections);
    /// Moves the cursor to a line (1-based) and centres it.
    void goToLine(int line);

    int gutterWidth() const;

protected:
    void resizeEvent(QResizeEvent* event) override;
    void changeEvent(QEvent* event) override;

private:
    class Gutter;
    friend class Gutter;
    void paintGutter(QPaintEvent* event);
    void updateGutterWidth();
    void updateGutter(const QRect& rect, int dy);
    void updateSelections();

    Gutter* m_gutter = nullptr;
    QSyntaxHighlighter* m_highlighter = nullptr;
    Language m_language = Language::Plain;
    QVector<int> m_lineNumbers;
    bool m_highlightCurrentLine = true;
    int m_markedLine = 0;
    QString m_markedMessage;
    int m_accentFirst = -1;
    int m_accentCount = 0;
    QList<QTextEdit::ExtraSelection> m_layers[LayerCount];
};

} // namespace kwb::app
