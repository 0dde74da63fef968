"""The compliance report's one stylesheet: screen, phone and paper.

Theory of operation. The report is read three ways: as the file ``stormwatch
report --out FILE.html`` (the stylesheet inlined in a ``<style>``: one file to
mail), as a page of the field app (linked from ``/static/report.css``, which
the app serves from this very text: its Content Security Policy allows no
inline style, so an inlined copy would be ignored and the page shown bare), and
as PDF (WeasyPrint lays out the inlined file for ``print``). One text for all
three, so they cannot drift. No element of the report carries a ``style=``
attribute (the policy blocks those too): everything is a class here.

On a screen a wide table scrolls inside its own box (``display: block;
overflow-x: auto``: the table keeps its columns, the page never scrolls
sideways on a phone; on a phone a cell is wide enough for a date, which would
otherwise break at each hyphen) and a plot is never wider than the page. The
header table's empty heading row is not shown. On paper
(``@media print``, ``@page``: US Letter landscape for the wide tables, the
title and "page N of M" at the foot) tables are tables again, a heading stays
with what follows it, photos are a run of inline boxes (a flex box would move
to the next page whole), and a plot with its caption is never split and is at
most 6.8 cm tall: two, with their captions and the section's heading, fit the
18.6 cm of a landscape Letter page inside its margins.
"""

from __future__ import annotations

from typing import Final

#: The field app's address of the stylesheet (the report's ``<link>``).
CSS_PATH: Final = "/static/report.css"

CSS: Final = """\
body{font-family:system-ui,sans-serif;margin:2em auto;padding:0 1em;max-width:70em;
 color:#222;line-height:1.35}
h1{font-size:1.6em;line-height:1.2}
table{border-collapse:collapse;margin:.5em 0 1.5em}
th,td{border:1px solid #bbb;padding:.25em .6em;text-align:left;vertical-align:top;
 font-size:.92em}
th{background:#eee}
h1+table tr:first-child{display:none}
h1+table td:last-child{overflow-wrap:anywhere}
blockquote{color:#444;border-left:3px solid #bbb;margin-left:0;padding-left:1em}
.late,.exceeded,.overdue{color:#b00;font-weight:bold} .met{color:#070}
img{max-width:100%;height:auto}
figure.plot{margin:.5em 0 1.5em;break-inside:avoid}
figure.plot img{display:block}
figure.plot figcaption{font-size:.85em;color:#444;margin-top:.3em;max-width:60em}
.photos{display:flex;flex-wrap:wrap;gap:1em;margin:.5em 0 1.5em}
.photos figure{margin:0;width:240px;max-width:100%;font-size:.8em;break-inside:avoid}
figure img.thumb{width:240px;height:auto;border:1px solid #bbb}
.missing{width:236px;max-width:100%;height:120px;border:2px dashed #b00;color:#b00;
 font-weight:bold;display:flex;align-items:center;justify-content:center;text-align:center;
 padding:2px;box-sizing:border-box}
.nowrap{white-space:nowrap} .note{font-size:.85em;color:#444;max-width:60em}
.sha{font-family:monospace;font-size:.85em;word-break:break-all;color:#444}
@media screen{
 table{display:block;max-width:100%;overflow-x:auto}
}
@media screen and (max-width:40em){
 body{margin:.75em auto;padding:0 .75em}
 h1{font-size:1.3em} h2{font-size:1.15em}
 blockquote{margin-right:0}
 th,td{font-size:.85em;padding:.2em .4em}
 td{min-width:6.5em}
}
@page{size:letter landscape;margin:1.4cm 1.2cm 1.6cm;
 @bottom-left{content:string(title);font-size:8pt;color:#555}
 @bottom-right{content:"page " counter(page) " of " counter(pages);font-size:8pt;color:#555}}
@media print{
 h1{string-set:title content()}
 body{margin:0;padding:0;max-width:none;font-size:9.5pt}
 h2,h3,h2+p{break-after:avoid} tr,figure,img{break-inside:avoid}
 th,td{font-size:8.5pt}
 figure.plot{margin:0 0 .3cm}
 figure.plot img{width:auto;max-height:6.8cm}
 figure.plot figcaption{font-size:8pt;margin-top:.1cm}
 .photos{display:block;orphans:1;widows:1}
 .photos figure{display:inline-block;vertical-align:top;margin:0 .8em .8em 0}
}
"""
