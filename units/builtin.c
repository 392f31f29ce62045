/* builtin: the standard units systemd ships in its own package — the
 * synchronisation targets of systemd.special(7), the root and system
 * slices, and Debian's syslog.socket — for a root booted with kin where that
 * package is not installed, yet packages' units name them (After=
 * network.target, WantedBy=multi-user.target, Requires=syslog.socket).
 * They are unit-file text read by the same parser as any file (fragment
 * ""), with the dependency lines systemd's own files have; a file of the
 * same name anywhere in the search path wins over a built-in. */
#include "units/files-int.h"

#include <string.h>

#define DOC "Documentation=man:systemd.special(7)\n"
#define B(n, t)                                                                                    \
	{                                                                                          \
		.name = (n), .text = (t)                                                           \
	}

struct builtin {
	const char *name;
	const char *text;
	const char *alias_of; /* only another name for that unit */
};

static const struct builtin builtins[] = {
    /* Without a default.target file or link, systemd's own choice. */
    {.name = "default.target", .alias_of = "multi-user.target"},
    B("multi-user.target", "[Unit]\nDescription=Multi-User System\n" DOC
                           "Requires=basic.target\nConflicts=rescue.service rescue.target\n"
                           "After=basic.target rescue.service rescue.target\nAllowIsolate=yes\n"),
    B("graphical.target",
      "[Unit]\nDescription=Graphical Interface\n" DOC
      "Requires=multi-user.target\nWants=display-manager.service\n"
      "Conflicts=rescue.service rescue.target\n"
      "After=multi-user.target rescue.service rescue.target display-manager.service\n"
      "AllowIsolate=yes\n"),
    /* RequiresMountsFor= pulls in only mount units that exist (fstab's). */
    B("basic.target", "[Unit]\nDescription=Basic System\n" DOC "Requires=sysinit.target\n"
                      "Wants=sockets.target timers.target paths.target slices.target\n"
                      "After=sysinit.target sockets.target paths.target slices.target tmp.mount\n"
                      "RequiresMountsFor=/var /var/tmp\nWants=tmp.mount\n"),
    B("sysinit.target", "[Unit]\nDescription=System Initialization\n" DOC
                        "DefaultDependencies=no\nConflicts=emergency.service emergency.target\n"
                        "Wants=local-fs.target swap.target\n"
                        "After=local-fs.target swap.target emergency.service emergency.target\n"),
    B("sockets.target", "[Unit]\nDescription=Socket Units\n" DOC),
    B("timers.target", "[Unit]\nDescription=Timer Units\n" DOC),
    B("paths.target", "[Unit]\nDescription=Path Units\n" DOC),
    B("slices.target", "[Unit]\nDescription=Slice Units\n" DOC "Wants=-.slice system.slice\n"
                       "After=-.slice system.slice\n"),
    B("local-fs.target", "[Unit]\nDescription=Local File Systems\n" DOC
                         "DefaultDependencies=no\nConflicts=shutdown.target\n"
                         "After=local-fs-pre.target\nOnFailure=emergency.target\n"
                         "OnFailureJobMode=replace-irreversibly\n"),
    B("local-fs-pre.target", "[Unit]\nDescription=Preparation for Local File Systems\n" DOC
                             "DefaultDependencies=no\nConflicts=shutdown.target\n"
                             "RefuseManualStart=yes\n"),
    B("remote-fs.target", "[Unit]\nDescription=Remote File Systems\n" DOC
                          "After=remote-fs-pre.target\nDefaultDependencies=no\n"
                          "Conflicts=shutdown.target\n\n[Install]\nWantedBy=multi-user.target\n"),
    B("remote-fs-pre.target",
      "[Unit]\nDescription=Preparation for Remote File Systems\n" DOC "RefuseManualStart=yes\n"),
    B("network.target", "[Unit]\nDescription=Network\n" DOC
                        "Documentation=https://www.freedesktop.org/wiki/Software/systemd/"
                        "NetworkTarget\nAfter=network-pre.target\nRefuseManualStart=yes\n"),
    B("network-pre.target",
      "[Unit]\nDescription=Preparation for Network\n" DOC "RefuseManualStart=yes\n"),
    B("network-online.target", "[Unit]\nDescription=Network is Online\n" DOC
                               "Requires=network.target\nAfter=network.target\n"),
    B("nss-lookup.target",
      "[Unit]\nDescription=Host and Network Name Lookups\n" DOC "RefuseManualStart=yes\n"),
    B("nss-user-lookup.target",
      "[Unit]\nDescription=User and Group Name Lookups\n" DOC "RefuseManualStart=yes\n"),
    B("time-set.target", "[Unit]\nDescription=System Time Set\n" DOC "RefuseManualStart=yes\n"),
    B("time-sync.target", "[Unit]\nDescription=System Time Synchronized\n" DOC
                          "After=time-set.target\nWants=time-set.target\n"
                          "RefuseManualStart=yes\n"),
    B("getty.target", "[Unit]\nDescription=Login Prompts\n" DOC),
    B("getty-pre.target",
      "[Unit]\nDescription=Preparation for Logins\n" DOC "RefuseManualStart=yes\n"),
    B("rescue.target",
      "[Unit]\nDescription=Rescue Mode\n" DOC "Requires=sysinit.target rescue.service\n"
      "After=sysinit.target rescue.service\nAllowIsolate=yes\n"),
    B("emergency.target", "[Unit]\nDescription=Emergency Mode\n" DOC
                          "Requires=emergency.service\nAfter=emergency.service\n"
                          "AllowIsolate=yes\n"),
    B("shutdown.target", "[Unit]\nDescription=System Shutdown\n" DOC
                         "DefaultDependencies=no\nRefuseManualStart=yes\n"),
    B("reboot.target", "[Unit]\nDescription=System Reboot\n" DOC
                       "DefaultDependencies=no\nRequires=systemd-reboot.service\n"
                       "After=systemd-reboot.service\nAllowIsolate=yes\nJobTimeoutSec=30min\n"
                       "JobTimeoutAction=reboot-force\n\n[Install]\nAlias=ctrl-alt-del.target\n"),
    B("poweroff.target", "[Unit]\nDescription=System Power Off\n" DOC
                         "DefaultDependencies=no\nRequires=systemd-poweroff.service\n"
                         "After=systemd-poweroff.service\nAllowIsolate=yes\n"
                         "JobTimeoutSec=30min\nJobTimeoutAction=poweroff-force\n"),
    B("halt.target", "[Unit]\nDescription=System Halt\n" DOC
                     "DefaultDependencies=no\nRequires=systemd-halt.service\n"
                     "After=systemd-halt.service\nAllowIsolate=yes\nJobTimeoutSec=30min\n"
                     "JobTimeoutAction=halt-force\n"),
    B("final.target", "[Unit]\nDescription=Late Shutdown Services\n" DOC
                      "DefaultDependencies=no\nRefuseManualStart=yes\n"
                      "After=shutdown.target umount.target\n"),
    B("umount.target", "[Unit]\nDescription=Unmount All Filesystems\n" DOC
                       "DefaultDependencies=no\nRefuseManualStart=yes\n"),
    B("swap.target", "[Unit]\nDescription=Swaps\n" DOC),
    B("cryptsetup.target", "[Unit]\nDescription=Local Encrypted Volumes\n" DOC),
    B("system-update.target",
      "[Unit]\nDescription=System Update\n" DOC "Documentation=man:systemd.offline-updates(7)\n"
      "Requires=sysinit.target\nAfter=sysinit.target\n"
      "AllowIsolate=yes\nWants=system-update-pre.target\n"),
    B("sound.target", "[Unit]\nDescription=Sound Card\n" DOC "StopWhenUnneeded=yes\n"),
    B("printer.target", "[Unit]\nDescription=Printer\n" DOC "StopWhenUnneeded=yes\n"),
    B("bluetooth.target", "[Unit]\nDescription=Bluetooth Support\n" DOC "StopWhenUnneeded=yes\n"),
    B("smartcard.target", "[Unit]\nDescription=Smart Card\n" DOC "StopWhenUnneeded=yes\n"),
    B("-.slice",
      "[Unit]\nDescription=Root Slice\n" DOC "DefaultDependencies=no\nBefore=slices.target\n"),
    B("system.slice",
      "[Unit]\nDescription=System Slice\n" DOC "DefaultDependencies=no\nBefore=slices.target\n"),
    /* Login prompts: systemd's package has these, a kin root does not.
     * agetty opens the tty itself (kin's children are session leaders). */
    B("getty@.service",
      "[Unit]\nDescription=Getty on %I\nAfter=getty-pre.target\nBefore=getty.target\n"
      "ConditionPathExists=/dev/tty0\n\n[Service]\n"
      "ExecStart=-/sbin/agetty -o '-p -- \\\\u' --noclear %I $TERM\nType=idle\n"
      "Restart=always\nRestartSec=0\nKillMode=process\nSendSIGHUP=yes\n"
      "Environment=TERM=linux\n\n[Install]\nWantedBy=getty.target\nDefaultInstance=tty1\n"),
    B("serial-getty@.service",
      "[Unit]\nDescription=Serial Getty on %I\nAfter=getty-pre.target\nBefore=getty.target\n\n"
      "[Service]\nExecStart=-/sbin/agetty -o '-p -- \\\\u' --keep-baud 115200,57600,38400,9600 "
      "%I $TERM\nType=idle\nRestart=always\nRestartSec=0\nKillMode=process\n"
      "SendSIGHUP=yes\nEnvironment=TERM=vt220\n\n[Install]\nWantedBy=getty.target\n"),
    /* Debian's systemd package: rsyslog.service Requires= it, and
     * syslog.service is the link its syslog daemon makes to itself. */
    B("syslog.socket",
      "[Unit]\nDescription=Syslog Socket\n" DOC
      "Documentation=https://www.freedesktop.org/wiki/Software/systemd/syslog\n"
      "DefaultDependencies=no\nBefore=sockets.target\n"
      "Conflicts=shutdown.target\nBefore=shutdown.target\n"
      "Conflicts=emergency.service\nBefore=emergency.service\n\n"
      "[Socket]\nListenDatagram=/run/systemd/journal/syslog\nSocketMode=0666\n"
      "PassCredentials=yes\nPassSecurity=yes\nReceiveBuffer=8M\nService=syslog.service\n\n"
      "[Install]\nWantedBy=sockets.target\n"),
};

const char *unit_builtin_text(const char *name, const char **ret_alias_of)
{
	if (ret_alias_of)
		*ret_alias_of = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(builtins); i++)
		if (strcmp(builtins[i].name, name) == 0) {
			if (ret_alias_of)
				*ret_alias_of = builtins[i].alias_of;
			return builtins[i].text;
		}
	return NULL;
}

const char *unit_builtin_name(size_t i)
{
	return i < ARRAY_SIZE(builtins) ? builtins[i].name : NULL;
}
