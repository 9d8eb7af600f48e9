"""Drives a Redfish BMC with OpenStack's sushy (Debian python3-sushy), for power's interop test.

Usage: sushy_client.py URL USER CA SYSTEM ACTION   (the password in BMC_PASSWORD)
ACTION: on, off, restart, pxe, status. Prints the system's state after the action as JSON.
"""
import json
import os
import sys

import sushy


def main():
    url, user, ca, system, action = sys.argv[1:6]
    auth = sushy.auth.SessionAuth(username=user, password=os.environ["BMC_PASSWORD"])
    root = sushy.Sushy(url + "/redfish/v1/", verify=ca, auth=auth)
    node = root.get_system("/redfish/v1/Systems/" + system)
    resets = {"on": sushy.RESET_ON, "off": sushy.RESET_FORCE_OFF, "restart": sushy.RESET_FORCE_RESTART}
    if action in resets:
        node.reset_system(resets[action])
    elif action == "pxe":
        node.set_system_boot_options(sushy.BOOT_SOURCE_TARGET_PXE, enabled=sushy.BOOT_SOURCE_ENABLED_ONCE,
                                     mode=sushy.BOOT_SOURCE_MODE_UEFI)
    elif action != "status":
        sys.exit("unknown action " + action)
    node.refresh()

    def name(v):
        # sushy 4 returns enums (PowerState.ON, value "on"); older releases plain strings.
        return str(getattr(v, "value", v))

    print(json.dumps({"power": name(node.power_state), "target": name(node.boot.target),
                      "enabled": name(node.boot.enabled), "mode": name(node.boot.mode)}))
    auth.close()  # deletes the session


main()
