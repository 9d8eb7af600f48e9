package redfishsim

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	root        = "/redfish/v1"
	systemsPath = root + "/Systems"
	sessionsURI = root + "/SessionService/Sessions"
	managerURI  = root + "/Managers/BMC"
)

// bootTargets are the override targets the systems take.
var bootTargets = []string{"None", "Pxe", "Hdd", "Cd", "BiosSetup", "UefiHttp"}

// obj is a JSON object.
type obj = map[string]any

func link(path string) obj { return obj{"@odata.id": path} }

// serve routes a request. Paths are matched with and without a trailing slash, as clients
// differ (sushy asks for /redfish/v1/, gofish for /redfish/v1).
func (b *BMC) serve(w http.ResponseWriter, r *http.Request) {
	b.mu.Lock()
	b.requests++
	b.mu.Unlock()
	p := strings.TrimSuffix(r.URL.Path, "/")
	switch {
	case p == "/redfish" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, obj{"v1": root + "/"})
		return
	case p == root && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, b.serviceRoot())
		return
	case p == sessionsURI && r.Method == http.MethodPost:
		b.login(w, r)
		return
	}
	if !b.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Basic realm="redfishsim"`)
		writeError(w, http.StatusUnauthorized, "Base.1.8.NoValidSession", "no valid session or credentials")
		return
	}
	switch {
	case p == root+"/SessionService":
		writeJSON(w, http.StatusOK, obj{"@odata.id": root + "/SessionService", "@odata.type": "#SessionService.v1_1_8.SessionService",
			"Id": "SessionService", "Name": "Session Service", "ServiceEnabled": true, "SessionTimeout": int(b.opts.SessionLifetime.Seconds()),
			"Sessions": link(sessionsURI)})
	case p == sessionsURI:
		b.sessionList(w)
	case strings.HasPrefix(p, sessionsURI+"/"):
		b.session(w, r, strings.TrimPrefix(p, sessionsURI+"/"))
	case p == systemsPath:
		b.systemList(w)
	case strings.HasPrefix(p, systemsPath+"/"):
		b.system(w, r, strings.TrimPrefix(p, systemsPath+"/"))
	case p == root+"/Managers":
		writeJSON(w, http.StatusOK, collection(root+"/Managers", "#ManagerCollection.ManagerCollection", "Manager Collection", []string{managerURI}))
	case p == managerURI:
		writeJSON(w, http.StatusOK, obj{"@odata.id": managerURI, "@odata.type": "#Manager.v1_10_0.Manager", "Id": "BMC", "Name": "Manager",
			"ManagerType": "BMC", "FirmwareVersion": "redfishsim", "Status": obj{"State": "Enabled", "Health": "OK"}})
	default:
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no resource at "+r.URL.Path)
	}
}

func (b *BMC) serviceRoot() obj {
	return obj{
		"@odata.id": root, "@odata.type": "#ServiceRoot.v1_11_0.ServiceRoot", "Id": "RootService", "Name": "Root Service",
		"RedfishVersion": "1.15.0", "UUID": "8c2f4a3e-5b1d-4e0a-9d3c-000000000001",
		"Systems": link(systemsPath), "Managers": link(root + "/Managers"), "SessionService": link(root + "/SessionService"),
		"Links": obj{"Sessions": link(sessionsURI)},
	}
}

func collection(path, typ, name string, members []string) obj {
	m := make([]obj, len(members))
	for i, x := range members {
		m[i] = link(x)
	}
	return obj{"@odata.id": path, "@odata.type": typ, "Name": name, "Members": m, "Members@odata.count": len(m)}
}

// authorized checks a session token or basic credentials, dropping sessions past their life.
func (b *BMC) authorized(r *http.Request) bool {
	if tok := r.Header.Get("X-Auth-Token"); tok != "" {
		b.mu.Lock()
		defer b.mu.Unlock()
		s := b.sessions[tok]
		if s == nil {
			return false
		}
		if !s.expires.IsZero() && time.Now().After(s.expires) || s.uses == 0 {
			delete(b.sessions, tok)
			return false
		}
		if s.uses > 0 {
			s.uses--
		}
		return true
	}
	u, p, ok := r.BasicAuth()
	return ok && u == b.User && p == b.Password
}

func (b *BMC) login(w http.ResponseWriter, r *http.Request) {
	var req struct{ UserName, Password string }
	if err := readJSON(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", err.Error())
		return
	}
	if req.UserName != b.User || req.Password != b.Password {
		writeError(w, http.StatusUnauthorized, "Base.1.8.InsufficientPrivilege", "wrong user name or password")
		return
	}
	var raw [16]byte
	_, _ = rand.Read(raw[:])
	b.mu.Lock()
	b.nextSess++
	b.logins++
	s := &session{id: strconv.Itoa(b.nextSess), token: hex.EncodeToString(raw[:]), uses: -1}
	if b.opts.SessionUses > 0 {
		s.uses = b.opts.SessionUses
	}
	if b.opts.SessionLifetime > 0 {
		s.expires = time.Now().Add(b.opts.SessionLifetime)
	}
	b.sessions[s.token] = s
	b.mu.Unlock()
	uri := sessionsURI + "/" + s.id
	w.Header().Set("X-Auth-Token", s.token)
	w.Header().Set("Location", uri)
	writeJSON(w, http.StatusCreated, sessionBody(s.id, b.User))
}

func sessionBody(id, user string) obj {
	return obj{"@odata.id": sessionsURI + "/" + id, "@odata.type": "#Session.v1_6_0.Session", "Id": id, "Name": "Session " + id, "UserName": user}
}

func (b *BMC) sessionList(w http.ResponseWriter) {
	b.mu.Lock()
	var uris []string
	for _, s := range b.sessions {
		uris = append(uris, sessionsURI+"/"+s.id)
	}
	b.mu.Unlock()
	slices.Sort(uris)
	writeJSON(w, http.StatusOK, collection(sessionsURI, "#SessionCollection.SessionCollection", "Session Collection", uris))
}

func (b *BMC) session(w http.ResponseWriter, r *http.Request, id string) {
	b.mu.Lock()
	var tok string
	for t, s := range b.sessions {
		if s.id == id {
			tok = t
		}
	}
	if tok != "" && r.Method == http.MethodDelete {
		delete(b.sessions, tok)
	}
	b.mu.Unlock()
	switch {
	case tok == "":
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no session "+id)
	case r.Method == http.MethodDelete:
		w.WriteHeader(http.StatusNoContent)
	default:
		writeJSON(w, http.StatusOK, sessionBody(id, b.User))
	}
}

func (b *BMC) systemList(w http.ResponseWriter) {
	writeJSON(w, http.StatusOK, b.systemsBody)
}

// system serves a ComputerSystem, its Settings resource and its reset action.
func (b *BMC) system(w http.ResponseWriter, r *http.Request, rest string) {
	id, sub, _ := strings.Cut(rest, "/")
	s := b.systems[id] // the map is never written after New
	switch {
	case s == nil:
		writeError(w, http.StatusNotFound, "Base.1.8.ResourceMissingAtURI", "no system "+id)
	case sub == "" && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, b.systemBody(s))
	case sub == "" && r.Method == http.MethodPatch:
		b.patchSystem(w, r, s, false)
	case sub == "Settings" && b.opts.BootReadOnly && r.Method == http.MethodGet:
		writeJSON(w, http.StatusOK, b.settingsBody(s))
	case sub == "Settings" && b.opts.BootReadOnly && r.Method == http.MethodPatch:
		b.patchSystem(w, r, s, true)
	case sub == "Actions/ComputerSystem.Reset" && r.Method == http.MethodPost:
		b.reset(w, r, s)
	default:
		writeError(w, http.StatusMethodNotAllowed, "Base.1.8.OperationNotAllowed", r.Method+" "+r.URL.Path)
	}
}

func (b *BMC) systemBody(s *system) obj {
	on := b.isOn(s)
	b.mu.Lock()
	defer b.mu.Unlock()
	uri := systemsPath + "/" + s.id
	body := obj{
		"@odata.id": uri, "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem", "Id": s.id, "Name": "System " + s.id,
		"SystemType": "Physical", "PowerState": powerState(on), "Status": obj{"State": "Enabled", "Health": "OK"},
		"Boot": bootBody(s.boot),
		"Actions": obj{"#ComputerSystem.Reset": obj{
			"target": uri + "/Actions/ComputerSystem.Reset", "ResetType@Redfish.AllowableValues": b.opts.ResetTypes}},
		"Links": obj{"ManagedBy": []obj{link(managerURI)}},
	}
	body["IndicatorLED"] = map[bool]string{true: "Lit", false: "Off"}[s.led]
	if !b.opts.LegacyLED {
		body["LocationIndicatorActive"] = s.led
	}
	if b.opts.BootReadOnly {
		body["@Redfish.Settings"] = obj{"@odata.type": "#Settings.v1_3_5.Settings", "SettingsObject": link(uri + "/Settings"),
			"SupportedApplyTimes": []string{"OnReset"}}
	}
	return body
}

func bootBody(bt Boot) obj {
	return obj{
		"BootSourceOverrideTarget": bt.Target, "BootSourceOverrideEnabled": bt.Enabled, "BootSourceOverrideMode": bt.Mode,
		"BootSourceOverrideTarget@Redfish.AllowableValues": bootTargets,
		"BootSourceOverrideMode@Redfish.AllowableValues":   []string{"Legacy", "UEFI"},
		"HttpBootUri": bt.URI,
	}
}

// settingsBody is the Settings resource: the boot override waiting for the next reset.
func (b *BMC) settingsBody(s *system) obj {
	b.mu.Lock()
	defer b.mu.Unlock()
	bt := s.boot
	if s.pending != nil {
		bt = *s.pending
	}
	return obj{"@odata.id": systemsPath + "/" + s.id + "/Settings", "@odata.type": "#ComputerSystem.v1_20_0.ComputerSystem",
		"Id": "Settings", "Name": "System " + s.id + " pending settings", "Boot": bootBody(bt)}
}

// patchSystem applies a PATCH of the system (or of its Settings resource): the boot override and
// the identify LED.
func (b *BMC) patchSystem(w http.ResponseWriter, r *http.Request, s *system, settings bool) {
	var req map[string]json.RawMessage
	if err := readJSON(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", err.Error())
		return
	}
	for k := range req {
		switch {
		case k == "Boot":
		case (k == "LocationIndicatorActive" && !b.opts.LegacyLED || k == "IndicatorLED") && !settings:
		default:
			writeError(w, http.StatusBadRequest, "Base.1.8.PropertyUnknown", "property "+k+" is unknown or not writable here", k)
			return
		}
	}
	if raw, ok := req["Boot"]; ok {
		if code, id, msg, prop := b.patchBoot(s, raw, settings); code != 0 {
			writeError(w, code, id, msg, prop)
			return
		}
	}
	if code, msg := b.patchLED(s, req); code != 0 {
		writeError(w, code, "Base.1.8.PropertyValueNotInList", msg, "IndicatorLED")
		return
	}
	if settings {
		writeJSON(w, http.StatusOK, b.settingsBody(s))
		return
	}
	writeJSON(w, http.StatusOK, b.systemBody(s))
}

// patchBoot checks and applies a boot override; a non-zero code is the refusal.
func (b *BMC) patchBoot(s *system, raw json.RawMessage, settings bool) (code int, id, msg, prop string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.bootPatch++
	if b.opts.BootReadOnly && !settings {
		return http.StatusBadRequest, "Base.1.8.PropertyNotWritable", "Boot is read-only here: PATCH the @Redfish.Settings resource", "Boot"
	}
	var req map[string]string
	if err := json.Unmarshal(raw, &req); err != nil {
		return http.StatusBadRequest, "Base.1.8.PropertyValueTypeError", "Boot: " + err.Error(), "Boot"
	}
	bt := s.boot
	if settings && s.pending != nil {
		bt = *s.pending
	}
	if code, id, msg, prop := b.applyBoot(&bt, req); code != 0 {
		return code, id, msg, prop
	}
	if b.drops != 0 {
		// Answered as done, and forgotten: the awkward BMC that reads back its old override.
		if b.drops > 0 {
			b.drops--
		}
		return 0, "", "", ""
	}
	if settings {
		s.pending = &bt
	} else {
		s.boot = bt
	}
	return 0, "", "", ""
}

// applyBoot checks a Boot body's properties into bt; a non-zero code is the refusal.
func (b *BMC) applyBoot(bt *Boot, req map[string]string) (code int, id, msg, prop string) {
	for k, v := range req {
		var ok bool
		switch k {
		case "BootSourceOverrideTarget":
			ok, bt.Target = slices.Contains(bootTargets, v), v
		case "BootSourceOverrideEnabled":
			ok, bt.Enabled = slices.Contains([]string{"Once", "Continuous", "Disabled"}, v), v
		case "BootSourceOverrideMode":
			if b.opts.RejectMode {
				return http.StatusBadRequest, "Base.1.8.PropertyNotWritable", "BootSourceOverrideMode is read-only", "Boot/BootSourceOverrideMode"
			}
			ok, bt.Mode = v == "Legacy" || v == "UEFI", v
		case "HttpBootUri":
			ok, bt.URI = true, v
		default:
			return http.StatusBadRequest, "Base.1.8.PropertyUnknown", "Boot/" + k + " is unknown", "Boot/" + k
		}
		if !ok {
			return http.StatusBadRequest, "Base.1.8.PropertyValueNotInList", fmt.Sprintf("Boot/%s: %q is not an allowed value", k, v), "Boot/" + k
		}
	}
	return 0, "", "", ""
}

func (b *BMC) patchLED(s *system, req map[string]json.RawMessage) (int, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if raw, ok := req["LocationIndicatorActive"]; ok {
		var v bool
		if err := json.Unmarshal(raw, &v); err != nil {
			return http.StatusBadRequest, "LocationIndicatorActive: want true or false"
		}
		s.led = v
	}
	if raw, ok := req["IndicatorLED"]; ok {
		var v string
		_ = json.Unmarshal(raw, &v)
		switch v {
		case "Lit", "Blinking":
			s.led = true
		case "Off":
			s.led = false
		default:
			return http.StatusBadRequest, fmt.Sprintf("IndicatorLED: %q: want Lit, Blinking or Off", v)
		}
	}
	return 0, ""
}

// reset accepts a ComputerSystem.Reset and applies it after the lag.
func (b *BMC) reset(w http.ResponseWriter, r *http.Request, s *system) {
	var req struct{ ResetType string }
	if err := readJSON(r, &req); err != nil {
		writeError(w, http.StatusBadRequest, "Base.1.8.MalformedJSON", err.Error())
		return
	}
	if !slices.Contains(b.opts.ResetTypes, req.ResetType) {
		writeError(w, http.StatusBadRequest, "Base.1.8.ActionParameterNotSupported",
			fmt.Sprintf("ResetType %q: allowable values %v", req.ResetType, b.opts.ResetTypes), "ResetType")
		return
	}
	if (req.ResetType == "ForceRestart" || req.ResetType == "GracefulRestart") && !b.isOn(s) {
		writeError(w, http.StatusConflict, "Base.1.8.ActionNotSupported", "the system is off: a restart needs it on")
		return
	}
	if b.opts.Lag <= 0 {
		b.apply(s, req.ResetType)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	b.timers.Add(1)
	go func() {
		defer b.timers.Done()
		t := time.NewTimer(b.opts.Lag)
		defer t.Stop()
		select {
		case <-t.C:
			b.apply(s, req.ResetType)
		case <-b.closed:
		}
	}()
	w.WriteHeader(http.StatusNoContent)
}

// apply carries a reset out: the power changes, and a power-on takes the one-time override.
func (b *BMC) apply(s *system, rt string) {
	on := b.isOn(s)
	b.mu.Lock()
	s.resets = append(s.resets, rt)
	b.mu.Unlock()
	switch rt {
	case "On", "ForceOn":
		if !on {
			b.powerOn(s)
		}
	case "ForceOff":
		if on {
			b.powerOff(s)
		}
	case "GracefulShutdown":
		// The guest is asked, where the machine can ask it; a machine that cannot is switched off.
		if sd, ok := s.machine.(Shutdowner); ok && on {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if err := sd.Shutdown(ctx); err != nil {
				b.logf("system %s: graceful shutdown: %v", s.id, err)
			}
		} else if on {
			b.powerOff(s)
		}
	case "ForceRestart", "GracefulRestart", "PowerCycle":
		if on {
			b.powerOff(s)
		}
		b.powerOn(s)
	case "PushPowerButton":
		if on {
			b.powerOff(s)
		} else {
			b.powerOn(s)
		}
	}
}

func (b *BMC) powerOn(s *system) {
	b.mu.Lock()
	if s.pending != nil {
		s.boot, s.pending = *s.pending, nil
	}
	from := ""
	if s.boot.Enabled == "Once" || s.boot.Enabled == "Continuous" {
		from = s.boot.Target
	}
	if s.boot.Enabled == "Once" {
		s.boot.Enabled, s.boot.Target = "Disabled", "None"
	}
	s.booted = append(s.booted, from)
	s.on = true
	m := s.machine
	b.mu.Unlock()
	if m != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.PowerOn(ctx, from); err != nil {
			b.logf("system %s: power on: %v", s.id, err)
		}
	}
}

func (b *BMC) powerOff(s *system) {
	b.mu.Lock()
	s.on = false
	m := s.machine
	b.mu.Unlock()
	if m != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := m.PowerOff(ctx); err != nil {
			b.logf("system %s: power off: %v", s.id, err)
		}
	}
}

// maxBody bounds a request body: a Redfish PATCH is a few hundred bytes.
const maxBody = 64 << 10

func readJSON(r *http.Request, v any) error {
	data, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	if err != nil {
		return err
	}
	return json.Unmarshal(data, v)
}

// writeJSON writes a body with its ETag (a hash of the body, as many BMCs make it).
func writeJSON(w http.ResponseWriter, code int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	sum := sha256.Sum256(data)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("OData-Version", "4.0")
	w.Header().Set("ETag", `W/"`+hex.EncodeToString(sum[:8])+`"`)
	w.WriteHeader(code)
	_, _ = w.Write(data)
}

// writeError writes a Redfish error body (the Base message registry's ids).
func writeError(w http.ResponseWriter, code int, id, msg string, props ...string) {
	info := obj{"@odata.type": "#Message.v1_1_1.Message", "MessageId": id, "Message": msg, "Severity": "Warning"}
	if len(props) > 0 {
		rel := make([]string, len(props))
		for i, p := range props {
			rel[i] = "#/" + p
		}
		info["RelatedProperties"] = rel
	}
	writeJSON(w, code, obj{"error": obj{"code": id, "message": msg, "@Message.ExtendedInfo": []obj{info}}})
}
