/* Delivers a console control event the way Windows delivers it, for the
 * Ctrl-Break check under Wine (scripts/windows/ctrl-c, README "Platforms").
 *
 * Windows runs a process's console handlers on a new thread that the
 * system starts in that process at kernelbase's CtrlRoutine, with the
 * event as the thread's argument; CtrlRoutine calls the handlers
 * registered with SetConsoleCtrlHandler, last registered first, until one
 * returns TRUE. Wine 8's console server sends only CTRL_C_EVENT
 * (GenerateConsoleCtrlEvent(CTRL_BREAK_EVENT, ...) fails, see
 * docs/testing.md), so this program starts that thread itself, with
 * CreateRemoteThread, in every running process whose image is the given
 * name. Exits 0 when it reached exactly one process, 1 otherwise.
 *
 * Usage: ctrl-break.exe IMAGE [EVENT]   (EVENT: 1 = CTRL_BREAK_EVENT, the
 * default; 0 = CTRL_C_EVENT). Built by scripts/test-windows with mingw-w64
 * into target/; never shipped. */
#include <windows.h>
#include <tlhelp32.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3) {
        fprintf(stderr, "usage: ctrl-break.exe IMAGE [EVENT]\n");
        return 2;
    }
    DWORD event = argc == 3 ? (DWORD)strtoul(argv[2], NULL, 10) : CTRL_BREAK_EVENT;
    /* kernelbase is mapped at the same address in every process (as on
     * Windows, where the system relies on it for this very thread). */
    HMODULE base = GetModuleHandleA("kernelbase.dll");
    FARPROC routine = base ? GetProcAddress(base, "CtrlRoutine") : NULL;
    if (!routine) {
        fprintf(stderr, "ctrl-break: no CtrlRoutine in kernelbase.dll (error %lu)\n", GetLastError());
        return 1;
    }
    HANDLE snapshot = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
    if (snapshot == INVALID_HANDLE_VALUE) {
        fprintf(stderr, "ctrl-break: no process list (error %lu)\n", GetLastError());
        return 1;
    }
    PROCESSENTRY32 entry;
    entry.dwSize = sizeof entry;
    int reached = 0;
    for (BOOL more = Process32First(snapshot, &entry); more; more = Process32Next(snapshot, &entry)) {
        if (lstrcmpiA(entry.szExeFile, argv[1]) != 0)
            continue;
        HANDLE process = OpenProcess(PROCESS_CREATE_THREAD | PROCESS_QUERY_INFORMATION | PROCESS_VM_OPERATION
                                         | PROCESS_VM_WRITE | PROCESS_VM_READ,
                                     FALSE, entry.th32ProcessID);
        if (!process) {
            fprintf(stderr, "ctrl-break: process %lu not opened (error %lu)\n", entry.th32ProcessID, GetLastError());
            continue;
        }
        HANDLE thread = CreateRemoteThread(process, NULL, 0, (LPTHREAD_START_ROUTINE)routine,
                                           (LPVOID)(ULONG_PTR)event, 0, NULL);
        if (thread) {
            reached++;
            CloseHandle(thread);
        } else {
            fprintf(stderr, "ctrl-break: no thread in process %lu (error %lu)\n", entry.th32ProcessID, GetLastError());
        }
        CloseHandle(process);
    }
    CloseHandle(snapshot);
    if (reached != 1) {
        fprintf(stderr, "ctrl-break: reached %d processes named %s, not 1\n", reached, argv[1]);
        return 1;
    }
    return 0;
}
