// The reading room's pages. Each page is one function that fills <main> from the JSON API;
// text from the server is always set as textContent (never parsed as HTML).
"use strict";

const CSRF = document.querySelector('meta[name="csrf-token"]').content;
const main = document.getElementById("main");

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (key === "text") node.textContent = value;
    else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else if (value !== null && value !== undefined && value !== false) node.setAttribute(key, value);
  }
  for (const child of children.flat()) if (child !== null && child !== undefined) node.append(child);
  return node;
}

async function api(path, body) {
  const options = body === undefined ? {} : {
    method: "POST",
    headers: { "content-type": "application/json", "x-csrf-token": CSRF },
    body: JSON.stringify(body),
  };
  const response = await fetch(path, options);
  const data = await response.json().catch(() => ({ error: `服务器返回了 ${response.status}` }));
  if (!response.ok) throw new Error(data.error || `请求失败（${response.status}）`);
  return data;
}

function show(...nodes) { main.replaceChildren(...nodes.flat().filter((n) => n !== null && n !== undefined)); }
function failed(error) { show(el("p", { class: "error", text: error.message })); }
function num(value, digits = 2) { return value === null || value === undefined ? "—" : Number(value).toFixed(digits); }
// A cost with 2 decimals, or 3 when the third one matters (5.675), as the command line writes it.
function cost(value) { const three = num(value, 3); return three.endsWith("0") ? num(value) : three; }
// The ledger's YYYYMMDD as every page shows a day: YYYY-MM-DD.
function day(d) { return `${d.slice(0, 4)}-${d.slice(4, 6)}-${d.slice(6)}`; }
function signed(value) { return value === null || value === undefined ? "—" : `${value > 0 ? "+" : ""}${num(value)}%`; }
function stockLink(code, name) { return el("a", { href: `/stock/${code}`, text: name ? `${code} ${name}` : code }); }
function table(headers, rows) {
  return el("div", { class: "scroll" }, el("table", {},
    el("thead", {}, el("tr", {}, headers.map((h) => el("th", { text: h })))),
    el("tbody", {}, rows.map((cells) => el("tr", {}, cells.map((c) => el("td", {}, c instanceof Node ? c : String(c ?? "—"))))))));
}
function dataNote(result) {
  return [
    el("p", { class: "muted", text: `数据源：${result.source ?? "—"}，截至 ${result.as_of ?? "—"}` }),
    result.data_note ? el("p", { class: "warn", text: `⚠ ${result.data_note}` }) : null,
  ];
}

// --- home and market -------------------------------------------------------------------------

async function homePage() {
  show(el("h1", { text: "Wyckoff 读盘室" }), el("p", { text: "和终端里是同一个智能体、同一套引擎：对话、大盘、选股、个股、持仓。" }),
    el("div", { class: "cards" }, [["chat", "对话", "问问题、看工具调用、批准操作"], ["market", "大盘", "市场状态、指数、涨跌家数"],
      ["screen", "选股", "最近一次漏斗结果，可在后台重新筛选"], ["portfolio", "持仓", "健康度、止损、改动与撤销"],
      ["watch", "自选", "关注的股票、标签和备注"], ["alerts", "提醒", "提醒规则和触发记录"],
      ["scorecard", "计分卡", "每条建议事后的 1/5/20 日结果"],
      ["briefs", "简报", "每日例行简报与待批准的操作"], ["memory", "记忆", "智能体记住的偏好和结论"]]
      .map(([page, title, text]) => el("a", { class: "card", href: `/${page}` }, el("strong", { text: title }), el("span", { text })))));
}

async function marketPage() {
  const result = await api("/api/market");
  const { regime, advance_decline: ad } = result;
  show(el("h1", { text: "大盘" }), ...dataNote(result),
    el("p", { class: "big", text: `市场状态：${regime.label}` }),
    el("p", { text: `${regime.reason}（${regime.buy_allowed ? "允许开新仓" : "禁止开新仓"}）` }),
    el("p", { text: `上涨 ${ad.up} / 下跌 ${ad.down} / 平 ${ad.flat}；站上 20 日均线 ${regime.breadth_pct}%` }),
    table(["代码", "名称", "收盘", "涨跌%", "20日%"],
      result.indices.map((i) => [el("button", { class: "link", text: i.code, onclick: () => showTrend(i.code) }),
        i.name, num(i.close), signed(i.pct_change), signed(i.ret20_pct)])),
    el("section", { id: "trend" }));
  if (result.indices.length) await showTrend(result.indices[0].code);
}

async function showTrend(code) {
  const trend = await api(`/api/market/index/${encodeURIComponent(code)}`);
  const s = trend.summary;
  const box = el("div", { id: "trend-chart", class: "chart small" });
  document.getElementById("trend").replaceChildren(el("h2", { text: `${trend.name} 近 ${trend.rows.length} 个交易日` }),
    el("p", { text: `区间涨跌 ${signed(s.period_return_pct)}，最大回撤 ${num(s.max_drawdown_pct)}%，上涨 ${s.up_days} 天 / 下跌 ${s.down_days} 天，5/20 日量比 ${s.volume_ratio_5_20 ?? "—"}` }),
    box);
  const LWC = window.LightweightCharts;
  const view = LWC.createChart(box, { autoSize: true, layout: { background: { color: "#ffffff" }, textColor: "#333" } });
  view.addSeries(LWC.AreaSeries, { lineColor: "#2e86de", topColor: "#2e86de44", bottomColor: "#2e86de05", lineWidth: 2 })
    .setData(trend.rows.map((r) => ({ time: r.date, value: r.close })));
  view.timeScale().fitContent();
}

// --- screen ----------------------------------------------------------------------------------

async function screenPage() {
  const result = await api("/api/screen");
  const job = result.job;
  const status = el("p", { id: "screen-status", class: "muted" });
  const button = el("button", { id: "run-screen", text: "在后台重新筛选", onclick: startScreen });
  if (job.status === "running") {
    status.textContent = `筛选中：${job.stage} ${job.detail}（${Math.round(job.fraction * 100)}%，${job.elapsed_s} 秒）`;
    button.disabled = true;
    setTimeout(() => screenPage().catch(failed), 1000);
  } else if (job.status === "error") status.textContent = `上次筛选失败：${job.error}`;
  else if (job.status === "done") status.textContent = "后台筛选已完成，下表是新结果。";
  const rows = result.rows;
  show(el("h1", { text: "选股" }), el("div", { class: "row" }, button, status),
    rows.length ? el("p", { class: "muted", text: `最近一次筛选：${rows[0].as_of}（数据源 ${rows[0].source}），先列触发信号的，再按评分排序。` })
      : el("p", { text: "还没有保存的筛选结果：点上面的按钮运行一次（或在终端运行 wyckoff screen）。" }),
    rows.length ? table(["股票", "收盘", "通道", "信号", "评分"],
      rows.map((r) => [stockLink(r.code, r.name), num(r.close), r.channels.join("+"), r.triggers.join("、") || "—", num(r.score, 1)])) : null);
}

async function startScreen() {
  try { await api("/api/screen/run", {}); } catch (error) { alert(error.message); }
  screenPage().catch(failed);
}

// --- stock -----------------------------------------------------------------------------------

async function stockPage(code) {
  const { chart, diagnosis: d } = await api(`/api/stock/${encodeURIComponent(code)}`);
  document.title = `${d.code} ${d.name} · Wyckoff`;
  const box = el("div", { id: "chart", class: "chart" });
  show(el("h1", { text: `${d.code} ${d.name}` }), ...dataNote(d), box,
    el("p", { class: "legend muted", text: "K 线（红涨绿跌）· 左上：吸筹阶段与健康度 · MA50 橙 · MA200 蓝 · ▲ 筛选信号日 · 虚线：60 日交易区间上下沿 · 红线：止损位" }),
    el("section", { class: "diagnosis" },
      el("p", { class: "big", text: `${d.health_label}　${d.phase}` }),
      el("ul", {}, d.reasons.map((r) => el("li", { text: r }))),
      el("p", { text: `均线：${d.ma.pattern}（MA20 ${d.ma.ma20} / MA50 ${d.ma.ma50} / MA200 ${d.ma.ma200}）` }),
      el("p", { text: `通道：${d.channels.join("、") || "无"}　信号：${d.triggers.join("、") || "无"}` }),
      el("ul", { class: "records" }, (d.signal_records || []).map((r) => el("li", { text: `${r.label} 的历史记录：${r.text}` }))),
      el("p", { text: `止损：${d.stop.stop}（${d.stop.label}）　${d.exit.detail}` }),
      el("p", { text: `RPS50 ${d.rps50 ?? "—"}　RPS120 ${d.rps120 ?? "—"}　距年内高点 ${d.from_year_high_pct ?? "—"}%` }),
      el("p", { text: "收益：" + Object.entries(d.returns_pct).map(([k, v]) => `${k} ${v ?? "—"}%`).join("　") })));
  drawChart(box, chart, d);
  const intraday = el("section", { id: "intraday" }, el("p", { class: "muted", text: "分时加载中……" }));
  main.append(intraday);
  showIntraday(intraday, await api(`/api/stock/${encodeURIComponent(d.code)}/intraday`));
}

// The minute path as `/chart CODE --intraday` draws it: price, running VWAP, the confirmed
// support and the prior close; then the latest tail verdict recorded for the stock.
function showIntraday(section, { intraday: day, note, tail }) {
  const parts = [el("h2", { text: "分时" })];
  if (day) {
    const m = day.minutes;
    parts.push(el("p", { class: "muted", id: "intraday-label", text: `数据源：${m.source}（${m.freq} 分钟线），截至 ${m.as_of}${m.complete ? "" : "（盘中，未收盘）"}` }),
      day.data_note ? el("p", { class: "warn", text: `⚠ ${day.data_note}` }) : null,
      el("div", { id: "intraday-chart", class: "chart small" }),
      el("p", { class: "legend muted", text: `价格（红：高于昨收 ${num(day.prior_close)}，绿：低于）· 黄线：VWAP · 青色虚线：确认支撑 ${num(day.support)}` }));
  } else parts.push(el("p", { class: "muted", text: `没有分时数据：${note}` }));
  parts.push(tail ? el("p", { id: "tail-verdict", text: `最近一次尾盘检查（${tail.checked_at}）：${tail.verdict}，${tail.role}，价 ${num(tail.price)}。${tail.reasons.join("；")}` })
    : el("p", { class: "muted", id: "tail-verdict", text: "这只股票还没有尾盘检查记录（wyckoff tail 会记录）。" }));
  section.replaceChildren(...parts.filter((p) => p));
  if (day) drawIntraday(document.getElementById("intraday-chart"), day);
}

function drawIntraday(box, day) {
  const LWC = window.LightweightCharts;
  const date = day.minutes.as_of.slice(0, 10);
  const at = (hhmm) => Date.parse(`${date}T${hhmm}:00Z`) / 1000; // the chart reads UTC as shown
  const view = LWC.createChart(box, { autoSize: true, layout: { background: { color: "#ffffff" }, textColor: "#333" },
    timeScale: { timeVisible: true, secondsVisible: false } });
  const price = view.addSeries(LWC.LineSeries, { color: "#333", lineWidth: 2, priceLineVisible: false });
  price.setData(day.points.map((p) => ({ time: at(p.time), value: p.close, color: p.close >= day.prior_close ? "#e0393e" : "#1a9b4b" })));
  view.addSeries(LWC.LineSeries, { color: "#f1c40f", lineWidth: 1, priceLineVisible: false, lastValueVisible: false })
    .setData(day.points.filter((p) => p.vwap !== null).map((p) => ({ time: at(p.time), value: p.vwap })));
  price.createPriceLine({ price: day.prior_close, color: "#7f8c8d", lineWidth: 1, lineStyle: LWC.LineStyle.Dotted, title: "昨收" });
  if (day.support) price.createPriceLine({ price: day.support, color: "#17a2b8", lineWidth: 1, lineStyle: LWC.LineStyle.Dashed, title: "确认支撑" });
  view.addSeries(LWC.HistogramSeries, { priceFormat: { type: "volume" }, priceLineVisible: false, lastValueVisible: false }, 1)
    .setData(day.points.map((p) => ({ time: at(p.time), value: p.volume, color: "#95a5a666" })));
  view.timeScale().fitContent();
}

function drawChart(box, chart, diagnosis) {
  const LWC = window.LightweightCharts;
  const up = "#e0393e", down = "#1a9b4b";
  const view = LWC.createChart(box, { autoSize: true, layout: { background: { color: "#ffffff" }, textColor: "#333" },
    grid: { vertLines: { color: "#eee" }, horzLines: { color: "#eee" } }, timeScale: { borderColor: "#ccc" } });
  const candles = view.addSeries(LWC.CandlestickSeries, { upColor: up, downColor: down, borderVisible: false, wickUpColor: up, wickDownColor: down });
  candles.setData(chart.bars.map((b) => ({ time: b.date, open: b.open, high: b.high, low: b.low, close: b.close })));
  const line = (values, color) => {
    const series = view.addSeries(LWC.LineSeries, { color, lineWidth: 1, priceLineVisible: false, lastValueVisible: false });
    series.setData(chart.bars.map((b, i) => ({ time: b.date, value: values[i] })).filter((p) => p.value !== null));
  };
  line(chart.ma50, "#f39c12");
  line(chart.ma200, "#2e86de");
  const volume = view.addSeries(LWC.HistogramSeries, { priceFormat: { type: "volume" }, priceLineVisible: false, lastValueVisible: false }, 1);
  volume.setData(chart.bars.map((b) => ({ time: b.date, value: b.volume, color: b.close >= b.open ? up + "99" : down + "99" })));
  const panes = view.panes();
  if (panes[1]) panes[1].setHeight(90);
  LWC.createSeriesMarkers(candles, chart.markers.map((date) => ({ time: date, position: "belowBar", color: "#8e44ad", shape: "arrowUp", text: "信号" })));
  candles.createPriceLine({ price: diagnosis.stop.stop, color: up, lineWidth: 1, title: "止损" });
  for (const [price, title] of [[chart.range.high, "区间上沿"], [chart.range.low, "区间下沿"]])
    candles.createPriceLine({ price, color: "#7f8c8d", lineWidth: 1, lineStyle: LWC.LineStyle.Dashed, title });
  LWC.createTextWatermark(view.panes()[0], { horzAlign: "left", vertAlign: "top",
    lines: [{ text: `${diagnosis.phase} · ${diagnosis.health_label.split(" ").pop()}`, color: "rgba(60, 60, 60, 0.45)", fontSize: 14 }] });
  view.timeScale().fitContent();
}

// --- portfolio -------------------------------------------------------------------------------

async function portfolioPage() {
  const result = await api("/api/portfolio");
  const holdings = result.positions.length
    ? table(["股票", "股数", "成本", "收盘", "盈亏", "健康度", "止损位", "自设止损", "离场"],
      result.positions.map((p) => [stockLink(p.code, p.name), p.shares, cost(p.cost_price), num(p.close), signed(p.pnl_pct),
        p.health_label ?? p.health, num(p.stop_level), p.stop_loss ? num(p.stop_loss) : "—", p.exit_status ? p.exit_status.detail : "—"]))
    : el("p", { text: "持仓为空：用下面的表单添加一笔。" });
  show(el("h1", { text: "持仓" }), result.source ? dataNote(result) : null,
    el("p", { text: `现金 ${yuan(Math.round(result.cash * 100))}${result.equity !== undefined ? `，总资产 ${yuan(Math.round(result.equity * 100))}` : ""}` }),
    holdings, ...ledger(result.pnl), ...navChart(result.nav), ...paperSection(result.paper), changeForm(), el("h2", { text: "改动记录" }),
    el("button", { id: "undo", text: "撤销最近一次改动…", onclick: () => makePlan({ action: "undo" }) }),
    result.history.length ? table(["时间", "谁", "动作", "之前", "之后", ""],
      result.history.map((h) => [h.at, h.actor, h.action, h.before, h.after, h.undone ? "已撤销" : ""])) : el("p", { class: "muted", text: "还没有改动。" }));
}

function yuan(cents) {
  if (cents === null || cents === undefined) return "—";
  const text = (Math.abs(cents) / 100).toLocaleString("en-US", { minimumFractionDigits: 2, maximumFractionDigits: 2 });
  return (cents < 0 ? "-" : "") + text;
}

// P&L per stock and in total, as `wyckoff portfolio show` prints it.
function ledger(pnl) {
  const rows = pnl.positions.map((r) => [stockLink(r.code, r.name), r.shares, cost(r.cost_cents / r.shares / 100),
    r.close === null ? "—" : `${num(r.close)}（${day(r.close_date)}）`, yuan(r.value_cents), yuan(r.unrealized_cents), yuan(r.realized_cents)])
    .concat(pnl.closed.map((r) => [stockLink(r.code, r.name), "已清仓", "", "", "", "", yuan(r.realized_cents)]));
  if (!rows.length) return [];
  return [el("h2", { text: "盈亏" }),
    table(["股票", "股数", "成本价", "收盘价", "市值", "浮动盈亏", "已实现盈亏"], rows),
    el("p", { id: "pnl-total", text: `现金 ${yuan(pnl.cash_cents)}，市值 ${yuan(pnl.value_cents)}，总资产 ${yuan(pnl.equity_cents)}；浮动盈亏 ${yuan(pnl.unrealized_cents)}，已实现盈亏 ${yuan(pnl.realized_cents)}` }),
    pnl.note || pnl.unpriced.length ? el("p", { class: "warn", text: pnl.note || `本地行情库没有 ${pnl.unpriced.join("、")} 的收盘价，未计入市值和浮动盈亏。` }) : null];
}

// The account's return each trading day beside the CSI 300's (`wyckoff portfolio nav`).
function navChart(nav) {
  const note = nav.note ? el("p", { class: "muted", text: nav.note }) : null;
  if (!nav.days.length) return [note];
  const box = el("div", { id: "nav-chart", class: "chart small" });
  const last = nav.days[nav.days.length - 1];
  requestAnimationFrame(() => {
    const LWC = window.LightweightCharts;
    const view = LWC.createChart(box, { autoSize: true, layout: { background: { color: "#ffffff" }, textColor: "#333" } });
    const line = (key, color, title) => view.addSeries(LWC.LineSeries, { color, lineWidth: 2, title })
      .setData(nav.days.filter((d) => d[key] !== null).map((d) => ({ time: day(d.date), value: d[key] })));
    line("return_pct", "#e0393e", "账户 %");
    line("csi300_pct", "#2e86de", "沪深300 %");
    view.timeScale().fitContent();
  });
  return [el("h2", { text: "每日净值" }),
    el("p", { id: "nav-last", text: `${day(last.date)} 总资产 ${yuan(last.nav_cents)}，累计 ${signed(last.return_pct)}，同期沪深300 ${signed(last.csi300_pct)}` }),
    box, el("p", { class: "legend muted", text: "红：账户累计收益 · 蓝：同期沪深300（按每天收盘价）" }), note];
}

// The paper account (`wyckoff paper show/nav`): its NAV beside the real account and the CSI 300,
// its holdings and the orders for the next open.
function paperSection(paper) {
  if (!paper) return [];
  const { book, nav } = paper;
  const head = [el("h2", { text: "纸面账户（按默认策略模拟成交）" }), paper.data_note ? el("p", { class: "demo", text: `⚠ ${paper.data_note}` }) : null];
  if (!nav.days.length) return [...head, el("p", { class: "muted", text: nav.note || "纸面账户还没有记过账。" })];
  const last = nav.days[nav.days.length - 1];
  const box = el("div", { id: "paper-chart", class: "chart small" });
  requestAnimationFrame(() => {
    const LWC = window.LightweightCharts;
    const view = LWC.createChart(box, { autoSize: true, layout: { background: { color: "#ffffff" }, textColor: "#333" } });
    const line = (key, color, title) => view.addSeries(LWC.LineSeries, { color, lineWidth: 2, title })
      .setData(nav.days.filter((d) => d[key] !== null).map((d) => ({ time: day(d.date), value: d[key] })));
    line("return_pct", "#8e44ad", "纸面 %");
    line("real_return_pct", "#e0393e", "真实账户 %");
    line("csi300_pct", "#2e86de", "沪深300 %");
    view.timeScale().fitContent();
  });
  const beside = [["真实账户", last.real_return_pct], ["沪深300", last.csi300_pct]]
    .filter(([, v]) => v !== null).map(([n, v]) => `${n} ${signed(v)}`).join("，");
  return [...head,
    el("p", { id: "paper-last", text: `${day(last.date)} 总资产 ${yuan(last.nav_cents)}，累计 ${signed(last.return_pct)}${beside ? `；同期${beside}` : ""}` }),
    box, el("p", { class: "legend muted", text: "紫：纸面账户 · 红：真实账户 · 蓝：沪深300（同一段交易日的累计收益）" }),
    book.positions.length ? table(["股票", "股数", "买入日", "成本", "市值"], book.positions.map((p) =>
      [stockLink(p.code, p.name), p.shares, day(p.entry_date), yuan(p.cost_cents), yuan(p.value_cents)])) : null,
    book.pending_orders.length ? el("p", { text: `下一交易日开盘买入：${book.pending_orders.map((o) => `${o.code} ${o.name}`).join("、")}` }) : null,
    ...book.last_unfilled.map((o) => el("p", { class: "muted", text: `${day(o.fill_date)} 未成交：${o.code} ${o.name}，${o.reason}` })),
    nav.note ? el("p", { class: "muted", text: nav.note }) : null];
}

function changeForm() {
  const field = (name, label, type = "text") => el("label", {}, label, el("input", { name, type, step: type === "number" ? "any" : null }));
  const form = el("form", { id: "change", class: "change" },
    el("h2", { text: "修改持仓（先生成计划，确认后执行）" }),
    el("label", {}, "操作", el("select", { name: "action" },
      [["buy", "成交：买入（扣费用）"], ["sell", "成交：卖出（扣费用）"], ["add", "添加/加仓（按成本）"], ["update", "修改"],
        ["remove", "删除"], ["set_cash", "设置现金"]].map(([v, t]) => el("option", { value: v, text: t })))),
    field("code", "代码或名称"), field("shares", "股数", "number"), field("price", "成交价", "number"),
    field("trade_date", "成交日期 YYYYMMDD"), field("cost_price", "成本价", "number"),
    field("stop_loss", "止损价", "number"), field("cash", "现金", "number"),
    el("button", { type: "submit", text: "生成计划" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const values = Object.fromEntries(new FormData(form));
    for (const key of ["shares"]) if (values[key]) values[key] = parseInt(values[key], 10);
    for (const key of ["price", "cost_price", "stop_loss", "cash"]) if (values[key]) values[key] = parseFloat(values[key]);
    makePlan(values);
  });
  return form;
}

// The two-step boundary: the server describes the change (`path` makes the plan), the user
// reads the sentence, and only "执行" makes it; then `reload` redraws the page.
async function makePlan(values, path = "/api/portfolio/plan", reload = portfolioPage) {
  let plan;
  try { plan = await api(path, values); } catch (error) { return notice(error.message, true); }
  const dialog = el("dialog", { id: "plan", class: "dialog" },
    el("h2", { text: "确认这个改动" }), el("p", { class: "sentence", text: plan.sentence }),
    el("div", { class: "row" },
      el("button", { id: "execute", class: "primary", text: "执行", onclick: async () => {
        dialog.close(); dialog.remove();
        try { notice((await api("/api/execute", { plan_id: plan.plan_id })).sentence); } catch (error) { notice(error.message, true); }
        await reload().catch(failed);
      } }),
      el("button", { id: "discard", text: "放弃", onclick: () => { dialog.close(); dialog.remove(); } })));
  document.body.append(dialog);
  dialog.showModal();
}

function notice(text, error = false) {
  const node = el("p", { class: error ? "notice error" : "notice", role: "status", text });
  document.body.append(node);
  setTimeout(() => node.remove(), 6000);
}

// --- memory and briefs -----------------------------------------------------------------------

async function memoryPage() {
  const { memories } = await api("/api/memory");
  const content = el("input", { name: "content", placeholder: "要记住的内容，例如：只做主板股票" });
  const kind = el("select", { name: "type" }, ["preference", "decision", "playbook", "persona"].map((t) => el("option", { value: t, text: t })));
  const form = el("form", { id: "add-memory", class: "row" }, kind, content, el("button", { type: "submit", text: "添加" }));
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    try { notice((await api("/api/memory/add", { content: content.value, type: kind.value })).sentence); } catch (error) { return notice(error.message, true); }
    memoryPage().catch(failed);
  });
  show(el("h1", { text: "记忆" }), form, memories.length
    ? table(["id", "类型", "内容", "股票", "状态", ""], memories.map((m) => [m.id, m.type, m.content, m.codes.join(","),
      m.superseded_by ? `已被 ${m.superseded_by} 取代` : "有效",
      el("button", { class: "small", text: "删除", onclick: async () => {
        if (!confirm(`删除记忆 ${m.id}：“${m.content}”？`)) return;
        try { notice((await api("/api/memory/delete", { id: m.id })).sentence); } catch (error) { notice(error.message, true); }
        memoryPage().catch(failed);
      } })]))
    : el("p", { text: "还没有记忆。在对话里说“记住：……”，或在终端运行 wyckoff memory add。" }));
}

async function briefsPage() {
  const [{ briefs }, approvals] = await Promise.all([api("/api/briefs"), api("/api/approvals")]);
  show(el("h1", { text: "简报" }), approvalsSection(approvals), briefs.length
    ? briefs.map((b) => el("article", { class: "brief" }, el("h2", { text: b.name }),
      b.html_file ? el("p", {}, el("a", { class: "html-brief", href: b.html_file, target: "_blank", rel: "noopener", text: "打开 HTML 版简报" })) : null,
      rendered(el("div", { class: "answer" }), b.html)))
    : el("p", { text: "还没有简报：每日例行任务写入 $WYCKOFF_HOME/briefs/ 后会显示在这里。" }));
}

// What scheduled runs asked to do and left for the user (`wyckoff approvals`).
function approvalsSection({ pending, done }) {
  const decide = (a, decision) => makePlan({ id: a.id, decision }, "/api/approvals/plan", briefsPage);
  return el("section", { id: "approvals" }, el("h2", { text: "待批准的操作" }),
    pending.length ? table(["编号", "操作", "来源", "提出时间", ""], pending.map((a) => [a.id,
      a.result ? `${a.description}（上次批准时没有执行：${a.result}）` : a.description, a.origin, a.created_at,
      el("span", { class: "row" }, el("button", { class: "small approve", text: "批准…", onclick: () => decide(a, "approve") }),
        el("button", { class: "small reject", text: "拒绝…", onclick: () => decide(a, "reject") }))]))
      : el("p", { class: "muted", text: "没有待批准的操作。" }),
    done.length ? el("details", {}, el("summary", { text: `已处理 ${done.length} 项` }),
      table(["编号", "状态", "操作", "结果"], done.map((a) => [a.id, a.status_label, a.description, a.result ?? "—"]))) : null);
}

// --- watchlist and alerts --------------------------------------------------------------------

async function watchPage() {
  const { watchlist } = await api("/api/watch");
  const form = el("form", { id: "add-watch", class: "row" },
    el("input", { name: "code", placeholder: "代码或名称", "aria-label": "代码或名称" }),
    el("input", { name: "tags", placeholder: "标签（逗号分隔，可空）", "aria-label": "标签" }),
    el("input", { name: "note", placeholder: "备注（可空）", "aria-label": "备注" }),
    el("button", { type: "submit", text: "加入自选…" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    makePlan({ action: "add", ...Object.fromEntries(new FormData(form)) }, "/api/watch/plan", watchPage);
  });
  show(el("h1", { text: "自选股" }), form, watchlist.length
    ? table(["股票", "标签", "备注", ""], watchlist.map((w) => [stockLink(w.code, w.name), w.tags.join("、"), w.note,
      el("button", { class: "small", text: "移出…", onclick: () => makePlan({ action: "remove", code: w.code }, "/api/watch/plan", watchPage) })]))
    : el("p", { text: "自选股为空：在上面加入一只。" }));
}

const ALERT_KINDS = [["stop", "跌破止损"], ["exit", "离场信号"], ["health-drop", "健康度变差"], ["trigger", "新的买入信号"],
  ["regime", "市场转为风险"], ["price", "价格"], ["change", "单日涨跌幅"], ["volume", "放量"]];

async function alertsPage() {
  const { rules, today, history } = await api("/api/alerts");
  const input = (name, label) => el("label", {}, label, el("input", { name, type: "number", step: "any" }));
  const form = el("form", { id: "add-alert", class: "change" }, el("h2", { text: "添加提醒（先生成计划，确认后执行）" }),
    el("label", {}, "类型", el("select", { name: "kind" }, ALERT_KINDS.map(([v, t]) => el("option", { value: v, text: `${v} ${t}` })))),
    el("label", {}, "范围", el("input", { name: "scope", value: "holdings", placeholder: "holdings / watchlist / market / 股票" })),
    input("threshold", "阈值（涨跌幅 % 或均量倍数）"), input("above", "收盘不低于"), input("below", "收盘不高于"),
    input("cooldown", "冷却交易日"), el("button", { type: "submit", text: "生成计划" }));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    makePlan({ action: "add", ...Object.fromEntries(new FormData(form)) }, "/api/alerts/plan", alertsPage);
  });
  const events = (rows) => table(["日期", "规则", "股票", "内容"], rows.map((e) => [e.date, `#${e.rule_id} ${e.kind}`, stockLink(e.code, e.name), e.message]));
  show(el("h1", { text: "提醒" }),
    el("h2", { text: "规则" }), rules.length
      ? table(["编号", "类型", "说明", ""], rules.map((r) => [r.id, r.kind, r.description,
        el("button", { class: "small", text: "删除…", onclick: () => makePlan({ action: "remove", id: r.id }, "/api/alerts/plan", alertsPage) })]))
      : el("p", { class: "muted", text: "还没有提醒规则。" }),
    form,
    el("h2", { text: today.length ? `最新触发（${today[0].date}）` : "最新触发" }),
    el("section", { id: "fired-today" }, today.length ? events(today) : el("p", { class: "muted", text: "还没有触发过提醒（每日例行任务或 wyckoff alert check 会检查）。" })),
    el("h2", { text: "历史" }), history.length ? events(history) : el("p", { class: "muted", text: "—" }));
}

// --- scorecard -------------------------------------------------------------------------------

async function scorecardPage() {
  const { items, summary, demo_summary: demo } = await api("/api/scorecard");
  const pct = (fraction) => signed(fraction === null || fraction === undefined ? null : fraction * 100);
  const score = (item, h) => item.unfillable ? (h === "1" ? item.unfillable : "—") : pct(item.outcomes[h].score);
  const lines = (rows) => el("ul", {}, rows.map((r) => el("li", { text: `${r.kind}：${r.line}` })));
  show(el("h1", { text: "计分卡" }),
    el("p", { class: "muted", text: "每条建议按次日开盘买入计：收益 = 第 h 日收盘 ÷ 次日开盘 − 1（复权），表中是相对全市场等权的超额；卖出、回避记为避免的损失。" }),
    el("h2", { text: "汇总（真实行情）" }), summary.length ? lines(summary) : el("p", { class: "muted", text: "还没有真实行情上的建议。" }),
    demo.length ? [el("h2", { text: "演示行情（合成数据，不计入上面的汇总）" }), el("section", { id: "demo-summary", class: "warn" }, lines(demo))] : null,
    el("h2", { text: "每条建议" }), items.length
      ? table(["编号", "类型", "股票", "建议日", "建议", "次日开盘", "1日", "5日", "20日", "我的操作"], items.map((i) => [
        i.id, i.kind_label + (i.demo ? "（演示）" : ""), stockLink(i.code, i.name), i.as_of, i.advice_label,
        i.entry_date ? `${i.entry_date} ${num(i.entry_price)}` : "待定", score(i, "1"), score(i, "5"), score(i, "20"), i.response_label]))
      : el("p", { class: "muted", text: "还没有建议：运行选股、尾盘检查，或在终端 wyckoff scorecard add 记下自己的判断。" }));
}

// --- chat ------------------------------------------------------------------------------------

const chat = { answer: null, rows: new Map(), delegations: new Map(), log: null };

function chatPage() {
  chat.log = el("div", { id: "log", class: "log", "aria-live": "polite" });
  const input = el("textarea", { id: "prompt", rows: 2, placeholder: "问点什么，例如：看看 600519 的走势" });
  const send = async () => {
    const text = input.value.trim();
    if (!text) return;
    try { await api("/api/chat/send", { text }); input.value = ""; } catch (error) { notice(error.message, true); }
  };
  input.addEventListener("keydown", (event) => { if (event.key === "Enter" && !event.shiftKey && !event.isComposing) { event.preventDefault(); send(); } });
  show(el("div", { class: "chat" },
    el("aside", { class: "sessions" },
      el("div", { class: "row" },
        el("button", { id: "new-chat", text: "新对话", onclick: () => switchSession("new") }),
        el("button", { id: "fork", text: "分叉", onclick: () => switchSession("fork") })),
      el("ul", { id: "session-list" })),
    el("section", { class: "conversation" }, el("p", { id: "chat-status", class: "muted" }), chat.log,
      el("div", { class: "composer" }, input,
        el("button", { id: "send", class: "primary", text: "发送", onclick: send }),
        el("button", { id: "cancel", text: "取消", onclick: () => api("/api/chat/cancel", {}).catch((e) => notice(e.message, true)) })))));
  const source = new EventSource("/api/chat/events");
  source.onmessage = (message) => onEvent(JSON.parse(message.data));
}

async function switchSession(choice, id) {
  try { await api("/api/chat/session", { choice, id }); } catch (error) { notice(error.message, true); }
}

function onEvent(event) {
  const handler = EVENTS[event.type];
  if (handler) handler(event);
  chat.log.scrollTop = chat.log.scrollHeight;
}

const EVENTS = {
  snapshot(event) {
    chat.log.replaceChildren();
    chat.answer = null; chat.rows.clear(); chat.delegations.clear();
    document.querySelectorAll("dialog.request").forEach((d) => d.remove());
    setStatus(event.error ? event.error : `会话 ${event.session_id}　模型 ${event.model}`, Boolean(event.error));
    for (const m of event.messages) {
      if (m.role === "tool") toolRow({ id: `h${chat.rows.size}`, name: m.name, title: m.title }).classList.add("finished");
      else if (m.role === "user") userBubble(m.text);
      else chat.log.append(rendered(el("div", { class: "answer" }), m.html));
      chat.answer = null;
    }
    for (const e of event.turn || []) onEvent(e);
    for (const e of event.waiting || []) onEvent(e);
    showSessions(event.sessions);
  },
  user_message(event) { userBubble(event.text); chat.answer = null; setStatus("思考中……"); },
  notice(event) { chat.log.append(el("p", { class: "muted", text: event.text })); },
  text_delta(event) {
    if (event.agent) { delegation(event).text.append(event.text); return; }
    if (!chat.answer) { chat.answer = el("div", { class: "answer" }); chat.log.append(chat.answer); }
    chat.answer.append(event.text);
  },
  answer_html(event) { if (chat.answer) rendered(chat.answer, event.html); chat.answer = null; },
  tool_start(event) {
    chat.answer = null;
    toolRow(event, event.agent ? delegation(event).body : chat.log);
  },
  tool_result(event) { finishRow(event, event.summary || "完成", false); },
  tool_error(event) { finishRow(event, event.error, true); },
  approved(event) { const row = chat.rows.get(event.id); if (row) row.querySelector(".note").textContent = `已批准（${event.by}）：${event.description.split("\n")[0]}`; },
  approval_request(event) { requestDialog(event); setStatus("等待你的批准……"); },
  question(event) { requestDialog(event); setStatus("等待你的回答……"); },
  answered(event) { document.getElementById(`request-${event.id}`)?.remove(); },
  task_update(event) { setStatus(`后台任务 ${event.tool}：${event.stage} ${event.detail}${event.progress != null ? `（${Math.round(event.progress * 100)}%）` : ""}`); },
  compaction(event) { chat.log.append(el("p", { class: "muted", text: `对话已压缩：${event.before} → ${event.after} 条消息` })); },
  provider_switch(event) { chat.log.append(el("p", { class: "warn", text: `已切换到备用模型 ${event.to}：${event.reason}` })); },
  done(event) {
    if (event.agent) { delegation(event).block.querySelector("summary").append(` · ${event.status}`); return; }
    chat.answer = null;
    const words = { completed: "回答完成", cancelled: "已取消本轮回答（历史已保存，可以继续提问）", max_rounds: "已达到工具调用轮数上限", error: `错误：${event.error}` };
    setStatus(words[event.status] || event.status, event.status === "error");
    api("/api/chat/sessions").then((result) => showSessions(result.sessions)).catch(() => {});
  },
};

function showSessions(sessions) {
  document.getElementById("session-list").replaceChildren(...sessions.map((s) => el("li", {},
    el("button", { class: "link", text: s.title || s.id, title: s.id, onclick: () => switchSession("resume", s.id) }),
    el("span", { class: "muted", text: ` ${s.messages} 条` }))));
}

function setStatus(text, error = false) {
  const status = document.getElementById("chat-status");
  status.textContent = text;
  status.className = error ? "error" : "muted";
}

// The server's Markdown rendering: raw HTML in the model's text arrives escaped, images are
// not rendered, and the page's CSP runs no inline script whatever the HTML says.
function rendered(node, html) {
  node.innerHTML = html;
  node.classList.add("rendered");
  return node;
}

function userBubble(text) { chat.log.append(el("div", { class: "user", text })); }

function toolRow(event, parent = chat.log) {
  const row = el("div", { class: "tool", "data-tool": event.name },
    el("span", { class: "title", text: `⚙ ${event.title || event.name}` }), el("span", { class: "name", text: ` ${event.name}` }),
    el("div", { class: "note" }));
  chat.rows.set(event.id, row);
  parent.append(row);
  return row;
}

function finishRow(event, text, error) {
  const row = chat.rows.get(event.id) || toolRow(event, event.agent ? delegation(event).body : chat.log);
  row.classList.add(error ? "failed" : "finished");
  row.querySelector(".note").textContent = text;
}

function delegation(event) {
  let entry = chat.delegations.get(event.delegation_id);
  if (!entry) {
    const text = el("div", { class: "answer" });
    const body = el("div", {}, text);
    const block = el("details", { class: "delegation", open: "" }, el("summary", { text: `子智能体 ${event.agent}` }), body);
    const parent = chat.rows.get(event.call_id) || chat.log;
    parent.append(block);
    entry = { block, body, text };
    chat.delegations.set(event.delegation_id, entry);
  }
  return entry;
}

function requestDialog(event) {
  const isApproval = event.type === "approval_request";
  const answer = (decision, text = "") => api("/api/chat/answer", { id: event.id, decision, text }).catch((e) => notice(e.message, true));
  const [sentence, ...detail] = (isApproval ? event.description : event.action_description || "").split("\n");
  const input = isApproval ? null : el("input", { name: "answer", placeholder: "你的回答" });
  const dialog = el("dialog", { id: `request-${event.id}`, class: "dialog request" },
    el("h2", { text: isApproval ? `需要你的批准：${event.title}（${event.name}）` : event.question }),
    sentence ? el("p", { class: "sentence", text: sentence }) : null,
    detail.length ? el("pre", { text: detail.join("\n") }) : null,
    isApproval ? el("pre", { class: "args", text: JSON.stringify(event.args, null, 2) }) : null,
    isApproval ? null : el("div", { class: "row" }, (event.options || []).map((o) => el("button", { text: o, onclick: () => answer("answer", o) }))),
    input,
    el("div", { class: "row" }, isApproval ? [
      el("button", { id: "allow", class: "primary", text: "允许一次", onclick: () => answer("allow") }),
      el("button", { id: "always", text: event.always_label, onclick: () => answer("always") }),
      el("button", { id: "deny", class: "danger", text: "拒绝", onclick: () => answer("deny") }),
    ] : [
      el("button", { id: "reply", class: "primary", text: "回答", onclick: () => answer("answer", input.value) }),
      el("button", { id: "skip", text: "跳过", onclick: () => answer("skip") }),
    ]));
  dialog.addEventListener("cancel", (e) => { e.preventDefault(); if (isApproval) answer("deny"); else answer("skip"); });
  document.body.append(dialog);
  dialog.showModal();
  dialog.querySelector(isApproval ? "#deny" : "#skip").focus(); // a stray Enter never approves
}

// --- routing ---------------------------------------------------------------------------------

document.getElementById("go").addEventListener("submit", (event) => {
  event.preventDefault();
  const code = new FormData(event.target).get("code").trim();
  if (code) location.href = `/stock/${encodeURIComponent(code)}`;
});

const PAGES = { home: homePage, chat: chatPage, market: marketPage, screen: screenPage, stock: () => stockPage(document.body.dataset.code),
  portfolio: portfolioPage, memory: memoryPage, briefs: briefsPage, watch: watchPage, alerts: alertsPage,
  scorecard: scorecardPage };
Promise.resolve().then(() => PAGES[document.body.dataset.page]()).catch(failed);
