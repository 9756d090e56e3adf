#pragma once
// Two texts side by side, aligned row by row (core/study/textdiff.h): a line missing on one side shows
// as a hatched filler there, so both columns always have the same rows and scroll together.
// Deleted lines are red on the left, inserted green on the right, a changed pair both, with the
// differing tokens in a stronger shade. The current change carries an accent bar in both gutters.

#include "app/editor/syntaxhighlighting.h"
#include "core/study/textdiff.h"

#include <QWidget>

namespace kwb::app {

class CodeEditor;

class SideBySideDiffView : public QWidget
{
    Q_OBJECT
public:
    explicit SideBySideDiffView(QWidget* parent = nullptr);

    void setTexts(const QString& left, const QString& right, Language language);
    void clear();

    const textdiff::Result& diff() const { return m_diff; }
    int changeCount() const { return int(m_diff.hunks.size()); }
    /// The change the accent marks, -1 for none.
    int currentChange() const { return m_current; }
    /// Marks change `index` and scrolls both sides to it; -1 clears the mark. False for a bad index.
    bool setCurrentChange(int index);

    CodeEditor* leftEditor() const { return m_left; }
    CodeEditor* rightEditor() const { return m_right; }

    /// The row (0-based) at the top of the view, the same on both sides.
    int firstVisibleRow() const;

Q_SIGNALS:
    void currentChangeChanged(int index);

protected:
    void changeEvent(QEvent* event) override;

private:
    void applyColours();

    CodeEditor* m_left = nullptr;
    CodeEditor* m_right = nullptr;
    textdiff::Result m_diff;
    int m_current = -1;
    bool m_syncingScroll = false;
};

} // namespace kwb::app
