#!/usr/bin/env bash
# Installs Coffer on a Linux machine with systemd: a release build of `coffer`, a `coffer` system user, the data
# folder /var/lib/coffer (0700, the user's), /etc/coffer with a starting config (0640 root:coffer) and the
# systemd unit. Run it from a clone, as root:
#
#   sudo deploy/install.sh                      # build, install, enable (start it after editing the config)
#   deploy/install.sh --root /tmp/stage --binary .build/debug/coffer    # lay the files out under a folder only
#
# With --root (not /) it only lays the files out under that folder: no user, no chown, no systemctl. It never
# overwrites an existing /etc/coffer/coffer.json or coffer.env. Check the result with:
#
#   /usr/local/bin/coffer --version && /usr/local/bin/coffer doctor --config /etc/coffer/coffer.json
#   systemd-analyze verify /etc/systemd/system/coffer.service
set -euo pipefail
cd "$(dirname "$0")/.."

root=/
binary=
while [ $# -gt 0 ]; do
    case "$1" in
        --root) root="${2:?--root needs a folder}"; shift 2 ;;
        --binary) binary="${2:?--binary needs a file}"; shift 2 ;;
        -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
        *) echo "unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
done
root="${root%/}"
system=false
if [ -z "$root" ]; then
    system=true
    [ "$(id -u)" -eq 0 ] || { echo "installing into / needs root: sudo $0" >&2; exit 1; }
fi

if [ -z "$binary" ]; then
    echo "== swift build -c release --product coffer"
    swift build -c release --product coffer
    binary="$(swift build -c release --show-bin-path)/coffer"
fi
[ -x "$binary" ] || { echo "no coffer binary at $binary" >&2; exit 1; }

echo "== files under ${root:-/}"
install -d -m 0755 "$root/usr/local/bin" "$root/etc/systemd/system" "$root/usr/local/share/doc/coffer"
install -m 0755 "$binary" "$root/usr/local/bin/coffer"
install -m 0644 deploy/coffer.service "$root/etc/systemd/system/coffer.service"
install -m 0644 README.md CHANGELOG.md LICENSE "$root/usr/local/share/doc/coffer/"
install -d -m 0750 "$root/etc/coffer"
install -d -m 0700 "$root/var/lib/coffer" "$root/var/lib/coffer/backups"
if [ ! -e "$root/etc/coffer/coffer.json" ]; then
    install -m 0640 deploy/coffer.json "$root/etc/coffer/coffer.json"
fi
if [ ! -e "$root/etc/coffer/catalog.json" ]; then
    install -m 0640 Examples/catalog.json "$root/etc/coffer/catalog.json"
fi
if [ ! -e "$root/etc/coffer/coffer.env" ]; then
    install -m 0640 /dev/null "$root/etc/coffer/coffer.env"
    echo "# COFFER_* secrets, e.g. COFFER_DATABASE_URL=postgres://coffer:PASSWORD@db:5432/coffer" \
        > "$root/etc/coffer/coffer.env"
fi

if $system; then
    echo "== the coffer user, ownership and the unit"
    if ! id coffer >/dev/null 2>&1; then
        useradd --system --home-dir /var/lib/coffer --shell /usr/sbin/nologin --user-group coffer
    fi
    chown coffer:coffer /var/lib/coffer /var/lib/coffer/backups
    chown root:coffer /etc/coffer /etc/coffer/coffer.json /etc/coffer/catalog.json /etc/coffer/coffer.env
    systemctl daemon-reload
    systemctl enable coffer
    echo "Installed. Edit /etc/coffer/coffer.json (bundle.id, app.apple.id, keys), then:"
    echo "  coffer doctor --config /etc/coffer/coffer.json && systemctl start coffer"
else
    echo "Laid out under $root (no user, ownership or systemd changes outside it)."
fi
