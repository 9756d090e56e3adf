#pragma once
// The SM clock over a stretch of GPU work, as nvbench measures it: a tiny kernel reads clock64()
// and %globaltimer on every SM before and after the work, and cycles / nanoseconds is the clock.
// Compiled once per process with NVRTC and loaded through the driver API; torch-free.
#include <memory>
#include <string>

namespace kwb {

class ClockProbe
{
public:
    /// Null with *why set where there is no device, NVRTC fails or the module does not load.
    static std::unique_ptr<ClockProbe> create(int ordinal, std::string* why);
    /// Compiles the probe for device `ordinal` (NVRTC only: no context needed), so that create()
    /// later only loads it; safe on any thread (compileOwnKernel).
    static void precompile(int ordinal);
    ~ClockProbe();
    ClockProbe(const ClockProbe&) = delete;
    ClockProbe& operator=(const ClockProbe&) = delete;

    /// Enqueues the probe on the legacy default stream: `slot` 0 before the work, 1 after it.
    void record(int slot);
    /// After the stream has synchronised: the mean SM clock in MHz between the two probes over the
    /// SMs both saw, or 0 where it cannot be told (too short to resolve the timer, no common SM).
    double clockMhz() const;
    /// The probe kernel's CUDA source (`kwb_clock_probe`), for tests that compile it without a GPU.
    static const char* source();
    /// The device's default SM clock (cudaDevAttrClockRate) in MHz.
    double defaultClockMhz() const { return m_defaultMhz; }

private:
    ClockProbe() = default;
    struct Impl;
    std::unique_ptr<Impl> m;
    double m_defaultMhz = 0;
};

} // namespace kwb
