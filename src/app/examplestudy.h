#pragma once
// The shipped example study's unpacking (README, "The window"): the run database of the study,
// installed as an xz archive (exampleStudyArchive(), workbenchdata.h), is unpacked once into
// exampleStudyDatabase() by xz in the background (27.8 MB from 0.3 MB), so the window stays
// responsive. The window opens what it unpacked; this class only makes the file.

#include "app/workbenchdata.h"

#include <QObject>
#include <QString>

namespace kwb::app {

class ExampleStudyUnpacker : public QObject
{
    Q_OBJECT
public:
    explicit ExampleStudyUnpacker(ExampleStudy which, QObject* parent = nullptr);

    /// Starts xz on the installed archive; `unpacked` or `failed` follows from the event loop.
    /// False with *error, and nothing started, where no example study is installed.
    bool start(QString* error = nullptr);

Q_SIGNALS:
    /// The database is complete at `database` (written to a .part file first, then renamed).
    void unpacked(const QString& database);
    /// Why not, as the welcome page says it: xz failed or is not installed, or the file could
    /// not be written.
    void failed(const QString& message);

private:
    ExampleStudy m_which;
};

} // namespace kwb::app
