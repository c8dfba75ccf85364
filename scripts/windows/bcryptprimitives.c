/* A stand-in for Windows' bcryptprimitives.dll, which Wine 8 lacks: Rust's
 * std (1.78 on) imports ProcessPrng from it for its random keys, so without
 * it no Rust program starts under Wine 8. ProcessPrng fills the buffer from
 * advapi32's RtlGenRandom (exported as SystemFunction036), which Wine has.
 * Built by scripts/test-windows with mingw-w64 into the Wine prefix's
 * system32 when it is missing there; never shipped. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

__declspec(dllexport) BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T length)
{
    while (length > 0) {
        ULONG n = length > 0x10000000 ? 0x10000000 : (ULONG)length;
        if (!SystemFunction036(data, n))
            return FALSE;
        data += n;
        length -= n;
    }
    return TRUE;
}
