// Script commands of the AI sidebar (the editor's scripted mode: {"do": "plugin_command", "command": "ai.generate",
// "args": {...}}). None of them blocks: generation runs on the worker, and scripts poll "ai.status" (or use the
// editor's wait-for) until the job is done. Every command returns a JSON object; user-level problems (empty prompt,
// bad model directory...) come back as {"ok": false, "error": "..."} and are shown in the panel too, malformed
// arguments throw (a failed script action).
//
//   ai.status                       model, current job (state, tokens, variations, previews), last job (+ its
//                                   history ids, one per variation), batch, history size, form
//   ai.set {form keys}              change the form (prompt, seed, guidance, top_p, variations, bbox, resolution,
//                                   face_cap, ...); {ok: false, error} and the form unchanged when invalid together
//   ai.generate {form keys, place}  validate + queue one job (place: override auto-place; variations: N shapes)
//   ai.cancel                       cancel the running and queued jobs
//   ai.pick {x, y} | {point:[x,y,z]}  choose the landing spot (viewport pixel ray hit, or a world point)
//   ai.arm_pick {history_id?, off?}  the next viewport click chooses the spot (or places that history entry)
//   ai.load_model {dir} | {default:true}
//   ai.history                      [{id, prompt, seed, variation, variations, faces, ...}]
//   ai.history_action {id|index, action: place|regenerate|variation|export|delete, path?, point?}
//   ai.latency_export {csv?, json?} write the whole latency log
//   ai.run_prompts {prompts:[...], csv?, json?, place?, priority?, form keys}  batch run; report written when all
//                                   ended. priority "normal" (default: inference at normal CPU priority, for
//                                   generation-speed figures) or "low" (as interactive jobs: the UI wins the CPU)
//   ai.messages                     the panel's current messages
//   ai.check {path, equals} | {path, op, value} | {all: [...]}  true/false on the status (JSON pointer), for
//                                   the script mode's wait_for: {"condition": "plugin_command", "equals": true}
//   ai.get {path}                   one value of the status
#include "controller/controller.h"

#include <cubeforge/error.h>

namespace cubeforge::ai {

using nlohmann::json;

namespace {
json parse_args(const std::string& s) {
  if (s.empty()) return json::object();
  json j = json::parse(s, nullptr, false);
  if (j.is_discarded()) throw Error("arguments are not valid JSON: " + s);
  if (j.is_null()) return json::object();
  if (!j.is_object()) throw Error("arguments must be a JSON object");
  return j;
}

json vec3(const Vec3& v) { return json::array({v[0], v[1], v[2]}); }

const char* level_name(MsgLevel l) { return l == MsgLevel::Error ? "error" : l == MsgLevel::Warning ? "warning" : "info"; }
}  // namespace

std::string Controller::status_json() const {
  json model = {{"state", to_string(model_.state)}, {"dir", model_.dir}, {"progress", model_.fraction},
                {"stage", model_.stage},            {"error", model_.error}};
  if (model_.info) {
    model["backend"] = model_.info->backend;
    model["backend_note"] = model_.info->backend_note;
    model["tokens"] = model_.info->num_tokens;
    model["bbox"] = model_.info->use_bbox;
    model["known_words"] = model_.info->known_words.size();
  }
  json j = {{"busy", busy()}, {"model", model}, {"queued", 0}, {"spot", vec3(spot_)}, {"picking", picking_},
            {"history", history_->entries().size()}, {"latency_records", latency_->records().size()},
            {"frame_ms", frame_ms_recent()}};
  int queued = 0;
  for (const auto& [id, v] : jobs_)
    if (v.state == JobState::Queued) ++queued;
  j["queued"] = queued;
  if (const JobView* c = current()) {
    j["job"] = {{"id", c->id},
                {"state", to_string(c->state)},
                {"prompt", c->spec ? c->spec->request.prompt : ""},
                {"stage", c->progress.stage},
                {"tokens_done", c->progress.tokens_done},
                {"tokens_total", c->progress.tokens_total},
                {"variations", c->progress.variations},
                {"variation", c->progress.variation},
                {"variations_decoding", c->progress.variations_decoding},
                {"tokens_per_s", c->progress.tokens_per_s},
                {"eta_ms", c->progress.eta_ms},
                {"previews", c->previews_seen},
                {"preview_tokens", c->preview_tokens},
                {"spot", vec3(c->spot)}};
  } else {
    j["job"] = nullptr;
  }
  j["last"] = {{"id", last_.id},
               {"state", last_.id ? to_string(last_.state) : ""},
               {"prompt", last_.prompt},
               {"message", last_.message},
               {"previews", last_.previews_seen},
               {"first_preview_tokens", last_.preview_tokens_first},
               {"placed", last_.placed},
               {"history_id", last_.history_id},
               {"history_ids", last_.history_ids},
               {"variations", last_.variations},
               {"faces", last_.faces}};
  if (const LatencyRecord* r = last_record()) j["last"]["latency"] = json::parse(to_json(*r));
  if (batch_) {
    j["batch"] = {{"total", batch_->jobs.size()}, {"finished", batch_->finished}, {"done", batch_->done},
                  {"failed", batch_->failed},     {"cancelled", batch_->cancelled}, {"complete", batch_->complete},
                  {"report_pending", batch_->report_pending}, {"csv", batch_->csv_path}, {"json", batch_->json_path},
                  {"report_error", batch_->report_error}};
  } else {
    j["batch"] = nullptr;
  }
  json msgs = json::array();
  for (const auto& m : messages_) msgs.push_back({{"level", level_name(m.level)}, {"text", m.text}});
  j["messages"] = msgs;
  j["form"] = to_json(form_);
  if (ui_status_) j["ui"] = ui_status_();
  return j.dump();
}

void Controller::register_commands() {
  auto result = [this](bool ok, json extra = json::object()) {
    extra["ok"] = ok;
    if (!ok) {
      std::string err;
      for (const auto& m : messages_)
        if (m.level == MsgLevel::Error) err = m.text;
      extra["error"] = err;
    }
    return extra.dump();
  };

  host_.add_command("ai.status", [this](const std::string&) { return status_json(); });

  host_.add_command("ai.get", [this](const std::string& a) {
    json args = parse_args(a);
    const json st = json::parse(status_json());
    const json::json_pointer ptr(args.value("path", std::string()));
    if (!st.contains(ptr)) return json(nullptr).dump();
    return st.at(ptr).dump();
  });

  host_.add_command("ai.check", [this](const std::string& a) {
    json args = parse_args(a);
    const json st = json::parse(status_json());
    auto one = [&](const json& c) -> bool {
      const json::json_pointer ptr(c.at("path").get<std::string>());
      const json v = st.contains(ptr) ? st.at(ptr) : json(nullptr);
      if (c.contains("equals")) return v == c["equals"];
      const std::string op = c.value("op", std::string("=="));
      const json& want = c.at("value");
      if (!v.is_number() || !want.is_number()) return op == "==" ? v == want : op == "!=" ? v != want : false;
      const double x = v.get<double>(), y = want.get<double>();
      if (op == "<") return x < y;
      if (op == "<=") return x <= y;
      if (op == ">") return x > y;
      if (op == ">=") return x >= y;
      if (op == "!=") return x != y;
      if (op == "==") return x == y;
      throw Error("unknown op '" + op + "' (<, <=, >, >=, ==, !=)");
    };
    bool ok = true;
    if (args.contains("all")) {
      for (const auto& c : args["all"]) ok = ok && one(c);
    } else {
      ok = one(args);
    }
    return json(ok).dump();
  });

  host_.add_command("ai.messages", [this](const std::string&) {
    json msgs = json::array();
    for (const auto& m : messages_) msgs.push_back({{"level", level_name(m.level)}, {"text", m.text}});
    return msgs.dump();
  });

  host_.add_command("ai.set", [this](const std::string& a) {
    const std::string why = edit_form(parse_args(a));
    if (!why.empty()) return json{{"ok", false}, {"error", why}}.dump();
    return to_json(form_).dump();
  });

  host_.add_command("ai.generate", [this, result](const std::string& a) {
    json args = parse_args(a);
    std::optional<bool> place;
    if (args.contains("place")) {
      place = args["place"].get<bool>();
      args.erase("place");
    }
    if (!edit_form(args).empty()) return result(false);
    const bool keep = form_.auto_place;
    if (place) form_.auto_place = *place;
    const JobId id = generate();
    form_.auto_place = keep;
    json warnings = json::array();
    for (const auto& m : messages_)
      if (m.level == MsgLevel::Warning) warnings.push_back(m.text);
    return result(id != 0, json{{"job", id}, {"warnings", warnings}});
  });

  host_.add_command("ai.cancel", [this](const std::string&) {
    const bool any = busy();
    cancel();
    return json{{"ok", true}, {"cancelled", any}}.dump();
  });

  host_.add_command("ai.pick", [this](const std::string& a) {
    json args = parse_args(a);
    if (args.contains("point")) {
      auto p = args["point"].get<std::array<float, 3>>();
      set_spot({p[0], p[1], p[2]});
      return json{{"ok", true}, {"hit", true}, {"spot", vec3(spot_)}}.dump();
    }
    if (!args.contains("x") || !args.contains("y")) throw Error("ai.pick needs {x, y} (viewport pixels) or {point: [x, y, z]}");
    const bool hit = pick_at(args["x"].get<float>(), args["y"].get<float>());
    return json{{"ok", hit}, {"hit", hit}, {"spot", vec3(spot_)}, {"entity", spot_entity_}}.dump();
  });

  host_.add_command("ai.arm_pick", [this](const std::string& a) {
    json args = parse_args(a);
    if (args.value("off", false))
      disarm_pick();
    else
      arm_pick(args.value("history_id", std::string()));
    return json{{"ok", true}, {"picking", picking_}}.dump();
  });

  host_.add_command("ai.load_model", [this](const std::string& a) {
    json args = parse_args(a);
    if (args.value("default", false) || !args.contains("dir"))
      select_model(true);
    else
      select_model(false, args["dir"].get<std::string>());
    return json{{"ok", true}, {"dir", model_dir()}}.dump();
  });

  host_.add_command("ai.history", [this](const std::string&) {
    json arr = json::array();
    for (const auto& e : history_->entries())
      arr.push_back({{"id", e.id}, {"prompt", e.prompt}, {"seed", e.seed}, {"variation", e.variation},
                     {"variations", e.variations}, {"faces", e.faces}, {"vertices", e.vertices}, {"created", e.created},
                     {"mesh", e.mesh_file}, {"thumbnail", e.thumb_file}, {"spec", e.spec}});
    return arr.dump();
  });

  host_.add_command("ai.history_action", [this, result](const std::string& a) {
    json args = parse_args(a);
    std::string id;
    if (args.contains("id")) {
      id = args["id"].get<std::string>();
    } else if (args.contains("index")) {
      int idx = args["index"].get<int>();
      const auto& es = history_->entries();
      if (idx < 0) idx += int(es.size());  // -1: newest
      if (idx < 0 || idx >= int(es.size())) throw Error("history index out of range");
      id = es[std::size_t(idx)].id;
    } else {
      throw Error("ai.history_action needs an id or an index");
    }
    if (!history_->find(id)) throw Error("no history entry '" + id + "'");
    const std::string action = args.value("action", "");
    if (action == "place") {
      std::optional<Vec3> at;
      if (args.contains("point")) {
        auto p = args["point"].get<std::array<float, 3>>();
        at = Vec3{p[0], p[1], p[2]};
      }
      const auto ent = history_place(id, at);
      return result(ent != editor::kNoEntity, json{{"entity", ent}});
    }
    if (action == "regenerate" || action == "variation") {
      const JobId job = action == "regenerate" ? history_regenerate(id) : history_variation(id);
      return result(job != 0, json{{"job", job}});
    }
    if (action == "export") {
      const std::string path = args.value("path", default_export_path(id));
      return result(history_export(id, path), json{{"path", path}});
    }
    if (action == "delete") return result(history_delete(id));
    throw Error("unknown history action '" + action + "' (place, regenerate, variation, export, delete)");
  });

  host_.add_command("ai.latency_export", [this, result](const std::string& a) {
    json args = parse_args(a);
    std::string csv = args.value("csv", ""), js = args.value("json", "");
    if (csv.empty() && js.empty()) {
      csv = default_report_path(".csv");
      js = default_report_path(".json");
    }
    return result(export_latency(csv, js), json{{"csv", csv}, {"json", js}, {"records", latency_->records().size()}});
  });

  host_.add_command("ai.run_prompts", [this, result](const std::string& a) {
    json args = parse_args(a);
    if (!args.contains("prompts") || !args["prompts"].is_array()) throw Error("ai.run_prompts needs {prompts: [...]}");
    std::vector<std::string> prompts = args["prompts"].get<std::vector<std::string>>();
    const std::string csv = args.value("csv", ""), js = args.value("json", "");
    const bool place = args.value("place", false);
    const std::string prio = args.value("priority", std::string("normal"));
    if (prio != "normal" && prio != "low") throw Error("priority must be 'normal' or 'low'");
    for (const char* k : {"prompts", "csv", "json", "place", "priority"}) args.erase(k);
    if (!edit_form(args).empty()) return result(false);
    const bool ok = run_batch(prompts, csv.empty() && js.empty() ? default_report_path(".csv") : csv,
                              csv.empty() && js.empty() ? default_report_path(".json") : js, place,
                              prio == "normal" ? std::optional<int>(0) : std::nullopt);
    json ids = json::array();
    if (ok)
      for (JobId id : batch_->jobs) ids.push_back(id);
    return result(ok, json{{"jobs", ids}});
  });
}

}  // namespace cubeforge::ai
