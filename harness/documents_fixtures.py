"""Real files of each supported format, written by the libraries users' tools write them with."""

from __future__ import annotations

import csv
from pathlib import Path


def make_pdf(path: Path, pages: list[str], encrypt_with: str | None = None) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    pdf.set_font("helvetica", size=11)
    for text in pages:
        pdf.add_page()
        if text:
            pdf.multi_cell(0, 6, text)
    if encrypt_with:
        pdf.set_encryption(owner_password="owner", user_password=encrypt_with)
    pdf.output(str(path))
    return path


def make_docx(path: Path) -> Path:
    import docx

    d = docx.Document()
    d.add_heading("Onboarding", level=1)
    d.add_paragraph("New engineers get a laptop with the VPN client preinstalled.")
    d.add_heading("Deployments", level=1)
    d.add_paragraph("Production deploys happen on Tuesdays after the standup meeting.")
    table = d.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "service", "owner"
    table.cell(1, 0).text, table.cell(1, 1).text = "billing", "Priya"
    d.save(str(path))
    return path


def make_xlsx(path: Path) -> Path:
    import openpyxl

    wb = openpyxl.Workbook()
    ws = wb.active
    ws.title = "Inventory"
    ws.append(["item", "count", "location"])
    ws.append(["espresso machine", 2, "kitchen"])
    ws.append(["standing desk", 14, "second floor"])
    ws2 = wb.create_sheet("Budget")
    ws2.append(["quarter", "amount"])
    ws2.append(["Q3", 125000])
    wb.save(str(path))
    return path


def make_csv(path: Path) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["city", "office_manager"])
        w.writerow(["Lisbon", "Joana"])
        w.writerow(["Oslo", "Henrik"])
    return path


def make_md(path: Path) -> Path:
    path.write_text(
        "# Runbook\n\nRestart the ingest worker with `systemctl restart ingest`.\n\n"
        "## Escalation\n\nPage the on-call SRE after two failed restarts.\n"
    )
    return path


def make_txt(path: Path) -> Path:
    path.write_text("The Wi-Fi password for guests is printed on the fridge.\n")
    return path
