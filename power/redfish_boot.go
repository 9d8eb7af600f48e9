package power

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/stmcginnis/gofish/schemas"
)

// rfBoot is a boot override.
type rfBoot struct {
	Enabled, Target, Mode, URI string
}

// body is the PATCH body: full with the mode (and the HTTP boot URI), else the target and
// Enabled alone.
func (b rfBoot) body(full bool) map[string]any {
	boot := map[string]string{"BootSourceOverrideEnabled": b.Enabled, "BootSourceOverrideTarget": b.Target}
	if full {
		boot["BootSourceOverrideMode"] = b.Mode
		if b.URI != "" {
			boot["HttpBootUri"] = b.URI
		}
	}
	return map[string]any{"Boot": boot}
}

// setBoot writes a boot override and reads it back. BMCs differ:
//   - some refuse a body naming BootSourceOverrideMode (legacy-only machines): it is sent again
//     with the target and Enabled alone;
//   - some have Boot read-only on the system and take it on its @Redfish.Settings resource
//     (applied at the next reset), with the ETag it was read with;
//   - some answer 200 and keep nothing: the override is read back where it was written, written
//     once more if it did not hold, and an error if it still does not.
func (c *rfCall) setBoot(sys *schemas.ComputerSystem, want rfBoot) error {
	var got rfBoot
	for attempt := 0; attempt < 2; attempt++ {
		where, err := c.patchBoot(sys, want)
		if err != nil {
			return err
		}
		if got, err = c.readBoot(where); err != nil {
			return fmt.Errorf("reading the boot override back: %w", err)
		}
		if got.Enabled == want.Enabled && got.Target == want.Target {
			return nil
		}
	}
	return fmt.Errorf("system %s: the BMC accepted the boot override (Enabled %s, Target %s) twice, and twice read back Enabled %s, Target %s: it does not hold",
		sys.ODataID, want.Enabled, want.Target, got.Enabled, got.Target)
}

// patchBoot tries the system, then its Settings resource, each with the full body and then the
// short one, until one is taken; it returns where.
func (c *rfCall) patchBoot(sys *schemas.ComputerSystem, want rfBoot) (string, error) {
	places := []string{sys.ODataID}
	if s := rfSettingsURI(sys.RawData); s != "" && s != sys.ODataID {
		places = append(places, s)
	}
	var refusals []string
	for i, where := range places {
		var headers map[string]string
		if i > 0 {
			etag, err := c.etag(where)
			if err != nil {
				return "", fmt.Errorf("settings %s: %w", where, err)
			}
			if etag != "" {
				headers = map[string]string{"If-Match": etag}
			}
		}
		for _, full := range []bool{true, false} {
			err := c.do(func() error { return rfClose(c.api.PatchWithHeaders(where, want.body(full), headers)) })
			if err == nil {
				return where, nil
			}
			if !rfRefused(err) {
				return "", fmt.Errorf("boot override at %s: %w", where, err)
			}
			refusals = append(refusals, fmt.Sprintf("%s (%s): %v", where, map[bool]string{true: "with mode", false: "target and Enabled alone"}[full], err))
		}
	}
	return "", fmt.Errorf("every boot override was refused: %s: %w", strings.Join(refusals, "; "), errBootRefused)
}

// errBootRefused marks a boot override every place refused.
var errBootRefused = errors.New("boot override refused")

// rfRefused reports whether the BMC refused a PATCH's body or method (400, 405, 412 a stale
// ETag, 501), which another body or place may pass.
func rfRefused(err error) bool {
	var se *schemas.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.HTTPReturnedStatusCode {
	case http.StatusBadRequest, http.StatusMethodNotAllowed, http.StatusPreconditionFailed, http.StatusNotImplemented:
		return true
	}
	return false
}

// etag reads a resource's ETag header.
func (c *rfCall) etag(uri string) (string, error) {
	var etag string
	err := c.do(func() error {
		resp, err := c.api.Get(uri)
		if err == nil {
			etag = resp.Header.Get("ETag")
		}
		return rfClose(resp, err)
	})
	return etag, err
}

// readBoot reads the override a resource holds.
func (c *rfCall) readBoot(uri string) (rfBoot, error) {
	var r struct {
		Boot struct {
			BootSourceOverrideEnabled, BootSourceOverrideTarget, BootSourceOverrideMode string
		}
	}
	if err := c.do(func() error { return rfGet(c.api, uri, &r) }); err != nil {
		return rfBoot{}, err
	}
	return rfBoot{Enabled: r.Boot.BootSourceOverrideEnabled, Target: r.Boot.BootSourceOverrideTarget, Mode: r.Boot.BootSourceOverrideMode}, nil
}

// rfSettingsURI is the @Redfish.Settings resource a system names, or "".
func rfSettingsURI(raw []byte) string {
	var r struct {
		Settings struct {
			SettingsObject struct {
				ID string `json:"@odata.id"`
			}
		} `json:"@Redfish.Settings"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return ""
	}
	return r.Settings.SettingsObject.ID
}
