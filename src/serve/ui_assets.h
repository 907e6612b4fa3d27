/* The web UI's files, compiled into the binary (build/gen/serve_ui.c, made by `xxd -i` from
 * src/serve/ui/ at build time): the UI works with no network.
 */
#ifndef STACKSCOPE_UI_ASSETS_H
#define STACKSCOPE_UI_ASSETS_H

extern unsigned char index_html[];
extern unsigned int index_html_len;
extern unsigned char app_js[];
extern unsigned int app_js_len;
extern unsigned char app_css[];
extern unsigned int app_css_len;
extern unsigned char source_view_js[];
extern unsigned int source_view_js_len;
extern unsigned char source_view_css[];
extern unsigned int source_view_css_len;

#endif
